package im.reliability;

import im.client.api.ImErrorException;
import im.client.api.PendingSend;
import im.client.api.SentAck;
import im.protocol.Event;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The campaign's edits and recalls: now and then (seeded, like the sends) a sender edits or recalls
 * one of its own recently confirmed messages through the SDK ({@code editAsync} / {@code recallAsync}),
 * which sends it through the outbox as a message is sent. Each is recorded as an attempt of its kind
 * with the message's seq, so its {@code sent} replies (and when they arrived) reach the history as a
 * send's do. Refusals ({@code TOO_LATE}, {@code NOT_MEMBER} after a leave, {@code RECALLED} for an
 * edit racing a recall from another device, ...) are counted by code, not judged.
 */
final class ChangeDriver {
    /** Share of a sender's turns that edit or recall instead of sending. */
    static final double CHANGE_CHANCE = 0.12;
    /** Share of those that recall. */
    static final double RECALL_SHARE = 0.4;
    /** How many of the device's latest messages a change picks from. */
    private static final int RECENT = 8;
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    final Map<String, Long> outcomes = new ConcurrentHashMap<>();
    /** Messages a device already recalled ("device conv seq"): a second recall would only be answered dup. */
    private final Set<String> recalled = ConcurrentHashMap.newKeySet();

    /**
     * Edits or recalls one of the device's recent confirmed messages in a conversation its user is in;
     * false when there is none (the caller sends instead).
     */
    boolean changeOne(CastDevice d, Set<String> convsOfUser, Random r, long k) {
        List<CastDevice.Attempt> recent = new ArrayList<>();
        for (CastDevice.Attempt a : d.attempts) {
            if (a.kind().equals(Event.MSG) && convsOfUser.contains(a.conv()) && d.acked.containsKey(a.cmid())
                    && !recalled.contains(d.id + " " + a.conv() + " " + d.acked.get(a.cmid()))) {
                recent.add(a);
            }
        }
        if (recent.isEmpty()) return false;
        CastDevice.Attempt target = recent.get(recent.size() - 1 - r.nextInt(Math.min(RECENT, recent.size())));
        long seq = d.acked.get(target.cmid());
        boolean recall = r.nextDouble() < RECALL_SHARE;
        String kind = recall ? Event.RECALL : Event.EDIT;
        String body = recall ? "" : d.id + " edit #" + k + " of " + seq;
        if (recall) recalled.add(d.id + " " + target.conv() + " " + seq);
        CompletableFuture<SentAck> f;
        try {
            f = recall ? d.client.recallAsync(target.conv(), seq, TIMEOUT) : d.client.editAsync(target.conv(), seq, body, TIMEOUT);
        } catch (IOException e) {
            count(kind, "local_failure");
            return true;
        }
        String cmid = cmidOf(d, kind, target.conv(), seq, body, f);
        if (cmid != null) d.attempts.add(new CastDevice.Attempt(cmid, target.conv(), body, d.epoch, kind, seq));
        f.whenComplete((ack, e) -> count(kind, e == null ? (ack.dup() ? "sent_dup" : "sent") : code(e)));
        return true;
    }

    /**
     * The cmid the SDK gave the change: its outbox entry's while it waits, else (already confirmed)
     * its ack's; null when it was refused before it could be read (then nothing was committed).
     */
    private static String cmidOf(CastDevice d, String kind, String conv, long seq, String body, CompletableFuture<SentAck> f) {
        for (PendingSend p : d.client.pending()) {
            if (p.kind().equals(kind) && p.conv().equals(conv) && p.ref() == seq && p.body().equals(body)) return p.cmid();
        }
        try {
            return f.get(TIMEOUT.toMillis() + 1_000, TimeUnit.MILLISECONDS).cmid();
        } catch (ExecutionException | TimeoutException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private void count(String kind, String outcome) {
        outcomes.merge(kind + "." + outcome, 1L, Long::sum);
    }

    private static String code(Throwable e) {
        Throwable c = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
        return c instanceof ImErrorException ie ? ie.code().wire() : c.getClass().getSimpleName();
    }

    Map<String, Long> figures() {
        return new TreeMap<>(outcomes);
    }
}
