package im.testkit;

import java.util.LinkedHashMap;
import java.util.Map;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.ImageNameSubstitutor;

/**
 * Testcontainers image-name substitution for machines that cannot pull from a registry: the
 * variable {@code TESTCONTAINERS_LOCAL_IMAGES} maps image names to local ones, e.g.
 * {@code postgres:17=localhost/im-standin/postgres:17,apache/kafka:4.3.1=localhost/im-standin/kafka:4.3.1}
 * (the stand-ins {@code ops/compose-smoke.sh} builds). Enabled by
 * {@code TESTCONTAINERS_IMAGE_SUBSTITUTOR=im.testkit.LocalImageSubstitutor}; names not in the map
 * are left alone.
 */
public final class LocalImageSubstitutor extends ImageNameSubstitutor {
    // Not IM_*: the roles and the test stack reject IM_* variables that are not configuration keys.
    public static final String VARIABLE = "TESTCONTAINERS_LOCAL_IMAGES";

    private final Map<String, String> images;

    public LocalImageSubstitutor() {
        this(System.getenv(VARIABLE));
    }

    LocalImageSubstitutor(String spec) {
        this.images = parse(spec);
    }

    /** {@code from=to[,from=to...]}; empty or null is no substitution; anything else is an error naming the entry. */
    static Map<String, String> parse(String spec) {
        Map<String, String> out = new LinkedHashMap<>();
        if (spec == null || spec.isBlank()) return out;
        for (String entry : spec.split(",")) {
            String[] parts = entry.strip().split("=", -1);
            if (parts.length != 2 || parts[0].isBlank() || parts[1].isBlank()) {
                throw new IllegalArgumentException(VARIABLE + ": '" + entry.strip() + "' is not IMAGE=LOCAL_IMAGE"
                        + " (e.g. postgres:17=localhost/im-standin/postgres:17)");
            }
            out.put(DockerImageName.parse(parts[0].strip()).asCanonicalNameString(), parts[1].strip());
        }
        return out;
    }

    @Override
    public DockerImageName apply(DockerImageName original) {
        String local = images.get(original.asCanonicalNameString());
        return local == null ? original : DockerImageName.parse(local).asCompatibleSubstituteFor(original);
    }

    @Override
    protected String getDescription() {
        return VARIABLE + " (" + images + ")";
    }
}
