import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Runs the bearer token cases written by token-cases-writer.ts through java.util.regex, the
 * engine API Gateway evaluates the TOKEN authorizer's identityValidationExpression with. Both
 * matches() and find() must give each case's expected verdict (the authorizer's), since either
 * may be how the gateway applies the pattern. Exits 1 on any mismatch.
 *
 * Usage: java test/java/TokenPatternCheck.java <cases file>
 */
public class TokenPatternCheck {
  /** Base64 of UTF-16BE code units, rebuilt char by char so lone surrogates survive too. */
  static String decode(String base64) {
    byte[] bytes = Base64.getDecoder().decode(base64);
    StringBuilder text = new StringBuilder(bytes.length / 2);
    for (int i = 0; i + 1 < bytes.length; i += 2) {
      text.append((char) (((bytes[i] & 0xff) << 8) | (bytes[i + 1] & 0xff)));
    }
    return text.toString();
  }

  /** The header as a Java string literal, so a failure shows invisible characters. */
  static String show(String text) {
    StringBuilder shown = new StringBuilder("\"");
    String cut = text.length() > 200 ? text.substring(0, 200) : text;
    for (char c : cut.toCharArray()) {
      if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') shown.append(c);
      else shown.append(String.format("\\u%04x", (int) c));
    }
    return shown.append(text.length() > 200 ? "\"... (" + text.length() + " chars)" : "\"").toString();
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: java TokenPatternCheck.java <cases file>");
      System.exit(2);
    }
    List<String> lines = Files.readAllLines(Path.of(args[0]));
    Pattern pattern = Pattern.compile(decode(lines.get(0)));
    int passed = 0;
    int failed = 0;
    for (String line : lines.subList(1, lines.size())) {
      if (line.isEmpty()) continue;
      String[] fields = line.split(" ");
      String header = decode(fields[0]);
      boolean expected = Boolean.parseBoolean(fields[1]);
      boolean matches = pattern.matcher(header).matches();
      boolean find = pattern.matcher(header).find();
      if (matches == expected && find == expected) {
        passed += 1;
      } else {
        failed += 1;
        if (failed <= 20) {
          System.out.println("MISMATCH " + show(header) + ": expected " + expected
              + ", matches() " + matches + ", find() " + find);
        }
      }
    }
    System.out.println("token pattern (java.util.regex): " + passed + " passed, " + failed + " failed");
    System.exit(failed == 0 && passed > 0 ? 0 : 1);
  }
}
