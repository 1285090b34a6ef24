import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

/* NioLoop N DIR: write a file with Files.write and read it back through a
 * FileChannel, N times; "step K SUM" after each, "done SUM" at the end.
 * Each of the 4 files always gets the same content: a process killed
 * after a checkpoint may have written them again meanwhile. */
public class NioLoop {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        Path dir = Paths.get(args[1]);
        long sum = 0;
        for (int i = 1; i <= n; i++) {
            Path p = dir.resolve("f" + (i % 4));
            byte[] data = ("line " + (i % 4) + "\n").repeat(i % 4 * 10 + 1)
                .getBytes();
            Files.write(p, data);
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
                ByteBuffer b = ByteBuffer.allocate(data.length + 1);
                while (ch.read(b) > 0) {
                }
                sum = sum * 31 + b.position() + i;
            }
            System.out.println("step " + i + " " + sum);
            Thread.sleep(20);
        }
        System.out.println("done " + sum);
    }
}
