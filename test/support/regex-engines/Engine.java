// java.util.regex, searched (find) as JVM validators do. Same protocol as engine.py.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

public class Engine {
  static String decode(String line) {
    StringBuilder text = new StringBuilder();
    for (String c : line.trim().split(" ")) if (!c.isEmpty()) text.appendCodePoint(Integer.parseInt(c, 16));
    return text.toString();
  }

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    Pattern pattern;
    try {
      pattern = Pattern.compile(decode(in.readLine()));
    } catch (PatternSyntaxException error) {
      System.out.println("error " + error.getDescription());
      return;
    }
    StringBuilder out = new StringBuilder();
    for (String line = in.readLine(); line != null; line = in.readLine())
      out.append(pattern.matcher(decode(line)).find() ? "1\n" : "0\n");
    System.out.print(out);
  }
}
