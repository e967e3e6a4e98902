package im.testkit;

import im.infra.config.ConfigKeys;
import im.infra.config.Settings;
import java.util.Map;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.PostgreSQLContainer;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.lifecycle.Startables;
import org.testcontainers.utility.DockerImageName;

/**
 * The opt-in Testcontainers provider ({@code IM_STACK=containers}) for machines with a Docker
 * engine: PostgreSQL 17 (logical WAL, synchronous commit, fsync on) and an apache/kafka 4.3.1
 * KRaft broker in containers. Nothing else in the project needs Docker; the default stack is the
 * embedded one (embedded PostgreSQL and {@link im.embedded.EmbeddedKafkaBroker}). Check
 * {@link #dockerAvailable()} before {@link #start()}.
 */
public final class ContainerStack implements AutoCloseable {

    public static final String POSTGRES_IMAGE = "postgres:17";
    public static final String KAFKA_IMAGE = "apache/kafka:4.3.1";   // the Kafka version of the pom

    private final PostgreSQLContainer<?> postgres;
    private final KafkaContainer kafka;

    private ContainerStack(PostgreSQLContainer<?> postgres, KafkaContainer kafka) {
        this.postgres = postgres;
        this.kafka = kafka;
    }

    /** True if Testcontainers can reach a Docker engine. Never throws; fast when there is none. */
    public static boolean dockerAvailable() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (Throwable t) {
            // Any failure to probe (missing socket, bad DOCKER_HOST, linkage) means "no Docker".
            return false;
        }
    }

    /** Starts both containers in parallel and waits until they are ready; stops both on failure. */
    public static ContainerStack start() {
        PostgreSQLContainer<?> pg = new PostgreSQLContainer<>(DockerImageName.parse(POSTGRES_IMAGE))
                .withCommand("postgres",
                        "-c", "wal_level=logical",
                        "-c", "synchronous_commit=on",
                        "-c", "fsync=on");
        KafkaContainer kafka = new KafkaContainer(DockerImageName.parse(KAFKA_IMAGE));
        ContainerStack stack = new ContainerStack(pg, kafka);
        try {
            Startables.deepStart(pg, kafka).join();
        } catch (RuntimeException e) {
            stack.close();
            throw e;
        }
        return stack;
    }

    /**
     * Where the containers listen, in the keys a role reads for an external stack:
     * IM_PG_URL, IM_PG_USER, IM_PG_PASSWORD and IM_KAFKA_BOOTSTRAP.
     */
    public Settings settings() {
        return Settings.of(Map.of(
                ConfigKeys.PG_URL.name(), postgres.getJdbcUrl(),
                ConfigKeys.PG_USER.name(), postgres.getUsername(),
                ConfigKeys.PG_PASSWORD.name(), postgres.getPassword(),
                ConfigKeys.KAFKA_BOOTSTRAP.name(), kafka.getBootstrapServers()));
    }

    @Override
    public void close() {
        try {
            kafka.stop();
        } finally {
            postgres.stop();
        }
    }
}
