package im.gateway;

import io.undertow.server.HttpHandler;
import io.undertow.server.HttpServerExchange;
import io.undertow.server.handlers.resource.ClassPathResourceManager;
import io.undertow.server.handlers.resource.ResourceHandler;
import io.undertow.util.HttpString;
import io.undertow.util.MimeMappings;

/**
 * The web client: static files from the classpath folder {@code web/} (HTML, CSS, the page's
 * ES module and, under {@code sdk/}, the committed browser build of the TypeScript SDK), served at
 * {@code /app/...}, with {@code /} answering the page itself. The page speaks the WebSocket
 * protocol at {@code /ws} through the SDK and reads {@code /api/conversations/{conv}/delivery};
 * see docs/web-client.md.
 */
final class WebApp {
    /** Only this origin's scripts, styles and connections (the page's WebSocket is same-origin). */
    private static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
            + " connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
    /** Browsers run module scripts only with a JavaScript MIME type; text/javascript is the one HTML names. */
    private static final MimeMappings MIME = MimeMappings.builder(true).addMapping("js", "text/javascript").build();

    private WebApp() {
    }

    /** The handler for the {@code /app} prefix. */
    static HttpHandler assets() {
        ResourceHandler files = new ResourceHandler(new ClassPathResourceManager(WebApp.class.getClassLoader(), "web"))
                .setMimeMappings(MIME)
                .setWelcomeFiles("index.html")
                .setDirectoryListingEnabled(false)
                .setCacheTime(0);
        return ex -> {
            secure(ex);
            files.handleRequest(ex);
        };
    }

    /** The handler for exactly {@code /}: the page, so http://host:port/ opens the client. */
    static HttpHandler index() {
        HttpHandler assets = assets();
        return ex -> {
            ex.setRelativePath("/index.html");
            assets.handleRequest(ex);
        };
    }

    private static void secure(HttpServerExchange ex) {
        ex.getResponseHeaders().put(HttpString.tryFromString("Content-Security-Policy"), CSP);
        ex.getResponseHeaders().put(HttpString.tryFromString("X-Content-Type-Options"), "nosniff");
        ex.getResponseHeaders().put(HttpString.tryFromString("Referrer-Policy"), "no-referrer");
    }
}
