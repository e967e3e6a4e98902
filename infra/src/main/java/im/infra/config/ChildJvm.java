package im.infra.config;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A child JVM configured the platform's way: by IM_* environment variables only, exactly the
 * given ones (none inherited from this process), stderr merged into stdout.
 */
public final class ChildJvm {
    private ChildJvm() {}

    /** {@code java <args...>} with this process' JDK and the given IM_* settings as its environment's IM_* part. */
    public static ProcessBuilder builder(Map<String, String> settings, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().keySet().removeIf(k -> k.startsWith("IM_"));
        pb.environment().putAll(settings);
        return pb;
    }

    /** {@code java <jvmOptions...> -cp <this JVM's class path> <mainClass> <mainArgs...>}. */
    public static ProcessBuilder onThisClassPath(Map<String, String> settings, List<String> jvmOptions, String mainClass,
                                                 String... mainArgs) {
        List<String> args = new ArrayList<>(jvmOptions);
        args.add("-cp");
        args.add(System.getProperty("java.class.path"));
        args.add(mainClass);
        args.addAll(List.of(mainArgs));
        return builder(settings, args);
    }
}
