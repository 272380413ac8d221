// Curator contenders for tests/interop.rs, compiled there with javac.
//
//   java Contender CONNECT PATH LOG ROUNDS HOLD_MS KIND...
//       One thread and one Curator client per KIND (read, write: an
//       InterProcessReadWriteLock's locks; mutex: an InterProcessMutex), each
//       taking its lock ROUNDS times and holding it HOLD_MS. Appends
//       "A <R|W> <name>" to LOG when it holds, "R <R|W> <name>" before it
//       releases (one write each, to a file opened for appending).
//   java Contender CONNECT PATH probe-mutex-then-writer
//       Takes the mutex, then tries the read/write lock's write lock for 2 s
//       on the same path; prints "writer granted: true|false".
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class Contender {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String path = args[1];
        if (args[2].equals("probe-mutex-then-writer")) {
            CuratorFramework c = client(connect);
            InterProcessMutex mutex = new InterProcessMutex(c, path);
            mutex.acquire();
            InterProcessLock writer = new InterProcessReadWriteLock(c, path).writeLock();
            boolean granted = writer.acquire(2, TimeUnit.SECONDS);
            System.out.println("writer granted: " + granted);
            if (granted) {
                writer.release();
            }
            mutex.release();
            c.close();
            return;
        }
        String log = args[2];
        int rounds = Integer.parseInt(args[3]);
        int hold = Integer.parseInt(args[4]);
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int i = 5; i < args.length; i++) {
            String kind = args[i];
            String name = "curator-" + kind + "-" + (i - 5);
            Thread t = new Thread(() -> {
                try {
                    run(connect, path, log, rounds, hold, kind, name);
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        if (!errors.isEmpty()) {
            errors.get(0).printStackTrace();
            System.exit(1);
        }
    }

    static CuratorFramework client(String connect) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 10000, new ExponentialBackoffRetry(50, 10));
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("cannot connect to " + connect);
        }
        return c;
    }

    static void append(String log, String line) throws IOException {
        try (FileOutputStream out = new FileOutputStream(log, true)) {
            out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        }
    }

    static void run(String connect, String path, String log, int rounds, int hold, String kind, String name) throws Exception {
        CuratorFramework c = client(connect);
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
        InterProcessLock lock;
        switch (kind) {
            case "read": lock = rw.readLock(); break;
            case "write": lock = rw.writeLock(); break;
            case "mutex": lock = new InterProcessMutex(c, path); break;
            default: throw new IllegalArgumentException("unknown kind " + kind);
        }
        String mode = kind.equals("read") ? "R" : "W";
        Random random = new Random();
        for (int r = 0; r < rounds; r++) {
            if (!lock.acquire(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException(name + ": not granted within 60 s");
            }
            append(log, "A " + mode + " " + name);
            Thread.sleep(hold);
            append(log, "R " + mode + " " + name);
            lock.release();
            Thread.sleep(random.nextInt(hold + 1));
        }
        c.close();
    }
}
