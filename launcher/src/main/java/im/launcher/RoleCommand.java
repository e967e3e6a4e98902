package im.launcher;

/**
 * An {@code im} command that runs roles of the platform ({@code platform}, {@code gateway},
 * {@code relay}, {@code delivery}, {@code sweeper}): the processes the compose stack runs as
 * services. The other top-level commands ({@code admin}, {@code send}, {@code tail}, {@code lag},
 * {@code events}) are clients of a running platform and do not implement it.
 */
public interface RoleCommand {
}
