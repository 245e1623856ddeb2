package curatornode;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON by hand, enough for this node: escaping strings it writes, and a small parser for
 * the resource's answers (objects, arrays, strings, numbers, true/false/null). Numbers
 * without a fraction or exponent parse as Long, others as Double.
 */
final class Json {
    private Json() {}

    /** {@code s} as a JSON string literal, quotes included; null as {@code null}. */
    static String str(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    /** Thrown for text that is not JSON. */
    static final class ParseError extends Exception {
        private static final long serialVersionUID = 1L;

        ParseError(String message) {
            super(message);
        }
    }

    /** Parses one JSON value filling the whole text. */
    static Object parse(String text) throws ParseError {
        Json.Parser p = new Json.Parser(text);
        p.ws();
        Object v = p.value();
        p.ws();
        if (p.i != text.length()) {
            throw new ParseError("trailing characters at " + p.i);
        }
        return v;
    }

    /** {@code text} parsed as a JSON object. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> parseObject(String text) throws ParseError {
        Object v = parse(text);
        if (!(v instanceof Map)) {
            throw new ParseError("not a JSON object");
        }
        return (Map<String, Object>) v;
    }

    private static final class Parser {
        final String s;
        int i;

        Parser(String s) {
            this.s = s;
        }

        void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        ParseError err(String what) {
            return new ParseError(what + " at " + i);
        }

        Object value() throws ParseError {
            if (i >= s.length()) {
                throw err("unexpected end");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{': return object();
                case '[': return array();
                case '"': return string();
                case 't': return literal("true", Boolean.TRUE);
                case 'f': return literal("false", Boolean.FALSE);
                case 'n': return literal("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        return number();
                    }
                    throw err("unexpected '" + c + "'");
            }
        }

        Object literal(String word, Object v) throws ParseError {
            if (!s.startsWith(word, i)) {
                throw err("bad literal");
            }
            i += word.length();
            return v;
        }

        Map<String, Object> object() throws ParseError {
            Map<String, Object> m = new LinkedHashMap<>();
            i++; // {
            ws();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                return m;
            }
            while (true) {
                ws();
                if (i >= s.length() || s.charAt(i) != '"') {
                    throw err("expected a key");
                }
                String k = string();
                ws();
                if (i >= s.length() || s.charAt(i) != ':') {
                    throw err("expected ':'");
                }
                i++;
                ws();
                m.put(k, value());
                ws();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                    continue;
                }
                if (i < s.length() && s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                throw err("expected ',' or '}'");
            }
        }

        List<Object> array() throws ParseError {
            List<Object> a = new ArrayList<>();
            i++; // [
            ws();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                return a;
            }
            while (true) {
                ws();
                a.add(value());
                ws();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                    continue;
                }
                if (i < s.length() && s.charAt(i) == ']') {
                    i++;
                    return a;
                }
                throw err("expected ',' or ']'");
            }
        }

        String string() throws ParseError {
            StringBuilder b = new StringBuilder();
            i++; // "
            while (i < s.length()) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    break;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw err("bad \\u escape");
                        }
                        try {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException ex) {
                            throw err("bad \\u escape");
                        }
                        i += 4;
                        break;
                    default:
                        throw err("bad escape");
                }
            }
            throw err("unterminated string");
        }

        Object number() throws ParseError {
            int start = i;
            boolean integral = true;
            if (s.charAt(i) == '-') {
                i++;
            }
            while (i < s.length()) {
                char c = s.charAt(i);
                if (c >= '0' && c <= '9') {
                    i++;
                } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                    integral = false;
                    i++;
                } else {
                    break;
                }
            }
            String t = s.substring(start, i);
            try {
                if (integral) {
                    return Long.parseLong(t);
                }
                return Double.parseDouble(t);
            } catch (NumberFormatException e) {
                throw err("bad number " + t);
            }
        }
    }
}
