package im.reliability;

import im.store.directory.Directory;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The campaign's cast, made through the {@link Directory}: users, their devices, random groups
 * (3..6 members) and direct conversations, everyone in at least one, and the probe pair the
 * nemesis uses after every heal (sender on gateway 0, receiver on gateway 1, alone in
 * {@link #PROBE_CONV}).
 */
record Cast(CastDevice probeSender, CastDevice probeReceiver) {
    static final String PROBE_CONV = "probe";

    /**
     * Creates the users, their devices (state directories under {@code workDir/clients}) and the
     * conversations, records memberships in {@code membership} and the devices in {@code devices}.
     */
    static Cast create(Directory directory, Campaign.Options o, Random random, MembershipDriver membership,
                       List<CastDevice> devices, List<String> convs) {
        for (String u : List.of("u-probe-s", "u-probe-r")) directory.createUser(u, "probe");
        List<String> users = new ArrayList<>();
        for (int i = 0; i < o.users(); i++) {
            String u = String.format("u%02d", i);
            directory.createUser(u, "user " + i);
            users.add(u);
            membership.memberOf.put(u, ConcurrentHashMap.newKeySet());
        }
        for (int i = 0; i < o.users(); i++) {
            int n = i < o.multiDeviceUsers() ? o.devicesPerUser() : 1;
            for (int k = 0; k < n; k++) {
                String id = "d-" + users.get(i) + "-" + k;
                String token = directory.registerDevice(users.get(i), id).token();
                devices.add(new CastDevice(devices.size(), id, users.get(i), token, o.workDir().resolve("clients").resolve(id)));
            }
        }
        Map<String, List<String>> members = new LinkedHashMap<>();
        members.put(PROBE_CONV, List.of("u-probe-s", "u-probe-r"));
        for (int g = 0; g < o.groups(); g++) {
            List<String> shuffled = new ArrayList<>(users);
            java.util.Collections.shuffle(shuffled, random);
            int size = Math.min(users.size(), 3 + random.nextInt(4));
            members.put("g" + g, new ArrayList<>(shuffled.subList(0, size)));
        }
        Set<String> pairs = new HashSet<>();
        for (int c = 0; c < o.directs(); c++) {
            for (int tries = 0; tries < 100; tries++) {
                int a = random.nextInt(users.size());
                int b = random.nextInt(users.size());
                if (a == b || !pairs.add(Math.min(a, b) + "-" + Math.max(a, b))) continue;
                members.put("c" + c, List.of(users.get(a), users.get(b)));
                break;
            }
        }
        // Everyone sends somewhere: a user in no conversation joins a random group.
        for (String u : users) {
            boolean in = members.values().stream().anyMatch(l -> l.contains(u));
            if (!in && o.groups() > 0) members.get("g" + random.nextInt(o.groups())).add(u);
        }
        for (Map.Entry<String, List<String>> e : members.entrySet()) {
            boolean group = e.getKey().startsWith("g");
            if (e.getKey().equals(PROBE_CONV)) {
                directory.createConversation(PROBE_CONV, "direct", e.getValue());
                convs.add(PROBE_CONV);
                continue;
            }
            directory.createConversation(e.getKey(), group ? "group" : "direct", e.getValue());
            convs.add(e.getKey());
            if (group) membership.groupConvs.add(e.getKey());
            for (String u : e.getValue()) membership.memberOf.get(u).add(e.getKey());
            Campaign.log("conversation %s: %s", e.getKey(), e.getValue());
        }
        // The probe pair: after every heal the nemesis measures one message end to end (sender on
        // gateway 0, receiver on gateway 1).
        return new Cast(probeDevice(directory, o, membership, devices, "u-probe-s", "d-probe-s", 0),
                probeDevice(directory, o, membership, devices, "u-probe-r", "d-probe-r", 1));
    }

    private static CastDevice probeDevice(Directory directory, Campaign.Options o, MembershipDriver membership,
                                          List<CastDevice> devices, String user, String id, int gateway) {
        membership.memberOf.put(user, ConcurrentHashMap.newKeySet());
        membership.memberOf.get(user).add(PROBE_CONV);
        CastDevice d = new CastDevice(devices.size(), id, user, directory.registerDevice(user, id).token(),
                o.workDir().resolve("clients").resolve(id));
        d.probe = true;
        d.gateway = gateway;
        devices.add(d);
        return d;
    }
}
