package im.store.send;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import im.protocol.ErrorCode;
import org.junit.jupiter.api.Test;

class SendRejectedExceptionTest {
    @Test
    void carriesItsWireCode() {
        assertEquals(ErrorCode.CMID_CONFLICT, new SendRejectedException(ErrorCode.CMID_CONFLICT, "x").errorCode());
    }

    @Test
    void aCodeNoSendCanReachIsAProgrammingError() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SendRejectedException(ErrorCode.CURSOR_AHEAD, "x"));
        assertEquals(true, e.getMessage().contains("SendRejectedException cannot carry CURSOR_AHEAD"), e.getMessage());
    }
}
