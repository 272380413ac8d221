// Writes a ZooKeeper 3.8 snapshot in which persistent nodes exist whose child
// version counter (cversion, the source of sequential nodes' suffixes) stands
// at chosen values, without creating that many children. Used by
// zk_rwlock_testkit::launcher (ZkClusterBuilder::seed_cversion), which compiles it
// with javac against the server's jars and runs it on fresh data directories.
//
// Usage: SeedCversion <dataDir> [<dataDir>...] -- <path> <cversion> [<path> <cversion>...]
//
// The paths and their missing parents are created as persistent nodes (open
// ACL) in a DataTree; then each path's persisted cversion is set to its value
// (any int: the next sequential child gets that value as its suffix, and a
// negative value gives the wrapped numbers ZooKeeper hands out to creates in
// flight past 2147483647). The tree is saved with FileTxnSnapLog as a
// snapshot into <dataDir>/version-2 of every data directory, where the server
// loads it at start-up. The snapshot carries no digest (ZooKeeper's digest
// would not cover the changed counters); the server computes its own on load.

import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.ZooKeeperServer;
import org.apache.zookeeper.server.persistence.FileTxnSnapLog;

public final class SeedCversion {
    private static long zxid = 0;

    public static void main(String[] args) throws Exception {
        List<File> dirs = new ArrayList<>();
        Map<String, Integer> seeds = new LinkedHashMap<>();
        int i = 0;
        while (i < args.length && !args[i].equals("--")) {
            dirs.add(new File(args[i++]));
        }
        i++;
        for (; i + 1 < args.length; i += 2) {
            seeds.put(args[i], Integer.parseInt(args[i + 1]));
        }
        if (dirs.isEmpty() || seeds.isEmpty() || i != args.length) {
            System.err.println("usage: SeedCversion <dataDir>... -- <path> <cversion> [<path> <cversion>...]");
            System.exit(2);
        }

        ZooKeeperServer.setDigestEnabled(false);
        DataTree tree = new DataTree();
        long now = System.currentTimeMillis();
        for (String path : seeds.keySet()) {
            createWithParents(tree, path, now);
        }
        for (Map.Entry<String, Integer> seed : seeds.entrySet()) {
            DataNode node = tree.getNode(seed.getKey());
            synchronized (node) {
                node.stat.setCversion(seed.getValue());
            }
        }
        tree.lastProcessedZxid = zxid;
        for (File dir : dirs) {
            FileTxnSnapLog snapLog = new FileTxnSnapLog(dir, dir);
            try {
                snapLog.save(tree, new ConcurrentHashMap<>(), true);
            } finally {
                snapLog.close();
            }
        }
    }

    private static void createWithParents(DataTree tree, String path, long now) throws Exception {
        int slash = path.lastIndexOf('/');
        if (slash > 0 && tree.getNode(path.substring(0, slash)) == null) {
            createWithParents(tree, path.substring(0, slash), now);
        }
        if (tree.getNode(path) == null) {
            tree.createNode(path, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, 0, -1, ++zxid, now);
        }
    }
}
