package im.reliability;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Runs a fault {@link Campaign} from the command line; exits 1 on any violation. */
@Command(name = "campaign", mixinStandardHelpOptions = true,
        description = "Randomized fault campaign: senders and receivers on a real stack while a nemesis injects faults, then the history checker.")
public final class CampaignMain implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;
    @Option(names = "--seed", description = "random seed, default: the current time")
    Long seed;
    @Option(names = "--seconds", description = "run time with load and faults, default ${DEFAULT-VALUE}")
    int seconds = 300;
    @Option(names = "--users", description = "users, default ${DEFAULT-VALUE}")
    int users = 20;
    @Option(names = "--devices-per-user", description = "devices of a multi-device user, default ${DEFAULT-VALUE}")
    int devicesPerUser = 2;
    @Option(names = "--multi-device-users", description = "users with several devices, default ${DEFAULT-VALUE}")
    int multiDeviceUsers = 8;
    @Option(names = "--groups", description = "group conversations, default ${DEFAULT-VALUE}")
    int groups = 6;
    @Option(names = "--directs", description = "direct (1:1) conversations, default ${DEFAULT-VALUE}")
    int directs = 10;
    @Option(names = "--rate", description = "sends per second over all devices, default ${DEFAULT-VALUE}")
    double rate = 30;
    @Option(names = "--fault-interval-ms", description = "mean time between faults, default ${DEFAULT-VALUE}")
    long faultIntervalMs = 8000;
    @Option(names = "--faults", split = ",", description = "fault kinds (${COMPLETION-CANDIDATES}); a kind listed n times is injected n times per round;"
            + " default every kind the stack runs (PG_FAILOVER and PG_STANDBY_OUTAGE need --pg-standby)")
    List<Nemesis.Kind> faults;
    @Option(names = "--membership-changes", description = "leave/join changes during the run, default ${DEFAULT-VALUE}")
    int membershipChanges = 10;
    @Option(names = "--offline-at-end", description = "devices offline from halfway until after the first check, default ${DEFAULT-VALUE}")
    int offlineAtEnd = 2;
    @Option(names = "--quiesce-seconds", description = "deadline to converge after the faults stop, default ${DEFAULT-VALUE}")
    int quiesceSeconds = 90;
    @Option(names = "--kafka-nodes", description = "Kafka KRaft nodes (child JVMs); with more than one every topic is replicated min(3, nodes) times and BROKER_KILL kills partition leaders and the active controller, default ${DEFAULT-VALUE}")
    int kafkaNodes = 1;
    @Option(names = "--pg-standby", description = "PostgreSQL as a primary + synchronous standby on a multi-host URL (enables PG_FAILOVER and PG_STANDBY_OUTAGE)")
    boolean pgStandby;
    @Option(names = "--work-dir", description = "where PostgreSQL, Kafka and client state go, default a new temporary directory")
    Path workDir;

    @Override
    public Integer call() throws Exception {
        long s = seed != null ? seed : System.currentTimeMillis();
        Campaign.Options o;
        try {
            o = new Campaign.Options(s, Duration.ofSeconds(seconds), users, devicesPerUser, multiDeviceUsers, groups, directs,
                    rate, Duration.ofMillis(faultIntervalMs), faults != null ? faults : Nemesis.Kind.all(pgStandby),
                    membershipChanges, offlineAtEnd, Duration.ofSeconds(quiesceSeconds),
                    workDir != null ? workDir : Files.createTempDirectory("im-campaign-"), kafkaNodes, pgStandby);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        Campaign.Result r = Campaign.run(o);
        System.out.println(r.ok() ? "CAMPAIGN OK (seed " + s + ")" : "CAMPAIGN FAILED (seed " + s + "): "
                + r.report().violations().size() + " violations");
        return r.ok() ? 0 : 1;
    }

    public static void main(String[] args) {
        int code = new CommandLine(new CampaignMain()).setCaseInsensitiveEnumValuesAllowed(true).execute(args);
        System.exit(code);
    }
}
