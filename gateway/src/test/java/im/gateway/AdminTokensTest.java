package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.config.ConfigException;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class AdminTokensTest {
    @ParameterizedTest
    @ValueSource(strings = {"aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "abababababababababababababababab",
            "0123456789abcdef0123456789abcdef", "short", "password12345678", "with space in it 0123456789abcdef"})
    void obviousTokensAreRefused(String token) {
        assertNotNull(AdminTokens.weakness(token), token);
        ConfigException e = assertThrows(ConfigException.class, () -> AdminTokens.parse(token));
        assertFalse(e.getMessage().contains(token), "the message never holds the token: " + e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"3f9c2a71e04b8d65c1f7a93e20b4d58c6e1a0f7b93d2c4e8", "Zq3-vW9_kP2xL7mN4rT8yB1cF6hJ0sD5"})
    void randomTokensPass(String token) {
        assertNull(AdminTokens.weakness(token), token);
    }

    @Test
    void aListRotatesAndEveryEntryIsChecked() {
        String a = "3f9c2a71e04b8d65c1f7a93e20b4d58c6e1a0f7b93d2c4e8";
        String b = "9b0e4c7d2a18f63e5d90c2b7a4f18e6d3c5b2a09f7e1d4c6";
        assertEquals(List.of(a, b), AdminTokens.parse(a + "," + b));
        ConfigException e = assertThrows(ConfigException.class, () -> AdminTokens.parse(a + ",aaaaaaaaaaaaaaaa"));
        assertTrue(e.getMessage().contains("token 2"), e.getMessage());
        assertThrows(ConfigException.class, () -> AdminTokens.parse(a + ","));
    }
}
