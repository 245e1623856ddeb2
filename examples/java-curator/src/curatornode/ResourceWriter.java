package curatornode;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The protected writes to Baton's fenced resource: {@code POST {resource_url}} with
 * {@code {"node": id, "token": T, "op": OP}}, each bounded by the write timeout. The
 * leader's loop ({@link Election}) is the only caller, so there is one write at a time.
 */
final class ResourceWriter {
    /** What became of one write. */
    enum Kind {
        ACCEPTED,
        /** The token is below the resource's max_token: a newer leader exists. */
        REJECTED,
        /** A seq batch not above the row: a late write of this leader's own. */
        BEHIND,
        /** Timed out, refused, an HTTP error or an unknown answer: it may have landed. */
        FAILED
    }

    static final class Result {
        final Kind kind;
        final long lastSeq;
        final long maxToken;
        final String error;

        Result(Kind kind, long lastSeq, long maxToken, String error) {
            this.kind = kind;
            this.lastSeq = lastSeq;
            this.maxToken = maxToken;
            this.error = error;
        }

        static Result failed(String error) {
            return new Result(Kind.FAILED, 0, 0, error);
        }
    }

    static String claimOp() {
        return "{\"kind\":\"claim\"}";
    }

    static String tickOp(long n) {
        return "{\"kind\":\"tick\",\"n\":" + n + "}";
    }

    static String seqOp(long first, long last) {
        return "{\"kind\":\"seq\",\"first\":" + first + ",\"last\":" + last + "}";
    }

    private final URI uri;
    private final String node;
    private final Duration timeout;
    private final HttpClient http;

    ResourceWriter(String url, String node, long timeoutMs) {
        this.uri = URI.create(url);
        this.node = node;
        this.timeout = Duration.ofMillis(timeoutMs);
        // HTTP/1.1 only: no h2c upgrade header on a plain-text connection. No proxy,
        // no redirects: the URL is Baton's proxy to the resource.
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(timeout)
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    /**
     * Sends one write under {@code token} and waits for its answer, at most the write
     * timeout. When it returns this node no longer waits on the write; a proxy may still
     * hold it and deliver it later, which only the resource's fence can stop.
     */
    Result write(long token, String op) {
        String body = "{\"node\":" + Json.str(node) + ",\"token\":" + token + ",\"op\":" + op + "}";
        HttpRequest req = HttpRequest.newBuilder(uri)
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
        CompletableFuture<HttpResponse<String>> f = http.sendAsync(req, HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> resp;
        try {
            // The request's own timeout covers the headers; this bounds the body too.
            resp = f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            return Result.failed("timed out after " + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            return Result.failed("interrupted");
        } catch (ExecutionException e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            return Result.failed(c.getClass().getSimpleName() + ": " + c.getMessage());
        }
        if (resp.statusCode() / 100 != 2) {
            return Result.failed("resource answered " + resp.statusCode());
        }
        Map<String, Object> m;
        try {
            m = Json.parseObject(resp.body());
        } catch (Json.ParseError e) {
            return Result.failed("resource answer is not a JSON object: " + e.getMessage());
        }
        Object outcome = m.get("outcome");
        Object lastSeq = m.get("last_seq");
        Object maxToken = m.get("max_token");
        if ("accepted".equals(outcome) && lastSeq instanceof Long) {
            return new Result(Kind.ACCEPTED, (Long) lastSeq, 0, null);
        }
        if ("rejected".equals(outcome) && maxToken instanceof Long) {
            return new Result(Kind.REJECTED, 0, (Long) maxToken, null);
        }
        if ("behind".equals(outcome) && lastSeq instanceof Long) {
            return new Result(Kind.BEHIND, (Long) lastSeq, 0, null);
        }
        return Result.failed("unexpected resource answer " + resp.body().trim());
    }
}
