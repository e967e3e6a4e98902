package im.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import im.infra.db.DatabaseUnavailableException;
import im.infra.error.RejectedException;
import im.protocol.ErrorCode;
import im.store.directory.DirectoryException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The one error table: every code has an HTTP status and a classification that agree with docs/protocol.md. */
class ErrorMapperTest {
    private static final Set<Integer> RETRIABLE_STATUSES = Set.of(429, 500, 503);
    private static final Pattern ROW = Pattern.compile("^\\| `([A-Z0-9_]+)` \\|[^|]*\\|([^|]*)\\|([^|]*)\\|");

    private static final class Refused extends RejectedException {
        Refused(ErrorCode code) {
            super(code, "refused " + code);
        }
    }

    /** code -> [closes? column, retriable? column] of the error table in docs/protocol.md. */
    private static Map<String, String[]> documentedTable() throws IOException {
        String doc = Files.readString(Path.of("..", "docs", "protocol.md"));
        int start = doc.indexOf("\n## Error codes");
        assertTrue(start >= 0, "docs/protocol.md has an Error codes section");
        int end = doc.indexOf("\n## ", start + 1);
        Map<String, String[]> rows = new LinkedHashMap<>();
        for (String line : doc.substring(start, end < 0 ? doc.length() : end).split("\n")) {
            Matcher m = ROW.matcher(line);
            if (m.find()) rows.put(m.group(1), new String[] {m.group(2).trim(), m.group(3).trim()});
        }
        return rows;
    }

    @Test
    void everyCodeHasAnHttpStatusWhoseClassMatchesTheDocumentedRetriability() throws IOException {
        Map<String, String[]> doc = documentedTable();
        for (ErrorCode code : ErrorCode.values()) {
            String[] row = doc.get(code.wire());
            assertNotNull(row, "docs/protocol.md error table lacks " + code);
            boolean documentedRetriable = row[1].startsWith("**yes");
            assertTrue(documentedRetriable || row[1].equals("no"), code + ": retriable? column is " + row[1]);
            assertEquals(documentedRetriable, code.retriable(), code + ": ErrorCode.retriable() vs docs/protocol.md");

            int status = ErrorMapper.httpStatus(code);
            assertTrue(status >= 400 && status <= 599, code + ": status " + status);
            assertEquals(code.retriable(), RETRIABLE_STATUSES.contains(status),
                    code + ": a retriable code gets 429/5xx, a terminal one 4xx; got " + status);

            String closes = code.closesConnection() ? "**yes, " + code.closeStatus() + "**" : "no";
            assertEquals(closes, row[0], code + ": closes? column vs ErrorCode.closeStatus()");

            ErrorMapper.Answer a = ErrorMapper.answer(new Refused(code), ErrorMapper.Door.CLIENT_HTTP, "retry", "test");
            if (code == ErrorCode.UNKNOWN_CONV || code == ErrorCode.NOT_MEMBER) {
                // one answer to devices for both: nobody learns which conversations exist
                assertEquals(new ErrorMapper.Answer(ErrorCode.NOT_MEMBER, "NOT_MEMBER", 403,
                        "not a member of this conversation (or no such conversation)", ErrorMapper.Kind.REJECTED), a);
            } else {
                assertEquals(new ErrorMapper.Answer(code, code.wire(), status, "refused " + code, ErrorMapper.Kind.REJECTED), a);
            }
            assertEquals(a, ErrorMapper.answer(new Refused(code), ErrorMapper.Door.SOCKET, "retry", "test"));
        }
        for (String documented : doc.keySet()) {
            assertTrue(ErrorCode.fromWire(documented).isPresent(), "docs/protocol.md documents unknown code " + documented);
        }
    }

    @Test
    void statusesOfTheClientApiStayAsDocumented() {
        // docs/protocol.md, "HTTP read endpoints for clients"
        Map<ErrorCode, Integer> documented = Map.of(ErrorCode.BAD_TOKEN, 401, ErrorCode.STALE_INSTALL, 401,
                ErrorCode.NOT_MEMBER, 403, ErrorCode.UNKNOWN_CONV, 404, ErrorCode.BAD_FIELD, 400,
                ErrorCode.UNAVAILABLE, 503, ErrorCode.INTERNAL, 500);
        documented.forEach((code, status) -> assertEquals(status, ErrorMapper.httpStatus(code), code.wire()));
    }

    @Test
    void theAdminApiAnswersADirectoryRefusalWithItsOwnCodeAndStatus() {
        Map<DirectoryException.Code, Integer> expected = Map.of(DirectoryException.Code.NOT_FOUND, 404,
                DirectoryException.Code.NOT_MEMBER, 404, DirectoryException.Code.ALREADY_EXISTS, 409,
                DirectoryException.Code.INVALID, 400, DirectoryException.Code.BAD_TOKEN, 401,
                DirectoryException.Code.STALE_INSTALL, 401, DirectoryException.Code.GROUP_FULL, 409);
        assertEquals(EnumSet.allOf(DirectoryException.Code.class), EnumSet.copyOf(expected.keySet()));
        expected.forEach((code, status) -> {
            DirectoryException e = new DirectoryException(code, "m");
            ErrorMapper.Answer admin = ErrorMapper.answer(e, ErrorMapper.Door.ADMIN_HTTP, "retry", "test");
            assertEquals(new ErrorMapper.Answer(code.wire(), code.name(), status, "m", ErrorMapper.Kind.REJECTED), admin);
            assertTrue(!code.wire().retriable() && status < 500, code + " is terminal");
            ErrorMapper.Answer socket = ErrorMapper.answer(e, ErrorMapper.Door.SOCKET, "retry", "test");
            assertEquals(code.wire(), socket.code());
        });
    }

    @Test
    void anUnavailableDatabaseIsRetriableAndNamesWhatToDo() {
        ErrorMapper.Answer a = ErrorMapper.answer(new DatabaseUnavailableException("send", new SQLException("gone", "08006")),
                ErrorMapper.Door.SOCKET, "ack again", "ack");
        assertEquals(new ErrorMapper.Answer(ErrorCode.UNAVAILABLE, "UNAVAILABLE", 503, "database unavailable, ack again",
                ErrorMapper.Kind.UNAVAILABLE), a);
    }

    @Test
    void anythingUnexpectedIsInternalWithoutItsMessage() {
        for (ErrorMapper.Door door : ErrorMapper.Door.values()) {
            ErrorMapper.Answer a = ErrorMapper.answer(new IllegalStateException("secret detail"), door, "retry", "test");
            assertEquals(new ErrorMapper.Answer(ErrorCode.INTERNAL, "INTERNAL", 500, "internal error", ErrorMapper.Kind.INTERNAL), a);
        }
    }
}
