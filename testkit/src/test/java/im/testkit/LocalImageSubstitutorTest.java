package im.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.testcontainers.utility.DockerImageName;

class LocalImageSubstitutorTest {

    @Test
    void mapsListedImagesAndLeavesOthers() {
        LocalImageSubstitutor s = new LocalImageSubstitutor(
                "postgres:17=localhost/im-standin/postgres:17, apache/kafka:4.3.1=localhost/im-standin/kafka:4.3.1");
        DockerImageName pg = s.apply(DockerImageName.parse("postgres:17"));
        assertEquals("localhost/im-standin/postgres:17", pg.asCanonicalNameString());
        assertTrue(pg.isCompatibleWith(DockerImageName.parse("postgres")), "usable where postgres is expected");
        assertEquals("localhost/im-standin/kafka:4.3.1", s.apply(DockerImageName.parse("apache/kafka:4.3.1")).asCanonicalNameString());
        assertEquals("redis:7", s.apply(DockerImageName.parse("redis:7")).asCanonicalNameString());
        assertEquals("postgres:17", new LocalImageSubstitutor("").apply(DockerImageName.parse("postgres:17")).asCanonicalNameString());
    }

    @Test
    void aMalformedEntryIsNamed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new LocalImageSubstitutor("postgres:17=localhost/pg:17,apache/kafka:4.3.1"));
        assertEquals("TESTCONTAINERS_LOCAL_IMAGES: 'apache/kafka:4.3.1' is not IMAGE=LOCAL_IMAGE (e.g. postgres:17=localhost/im-standin/postgres:17)",
                e.getMessage());
    }
}
