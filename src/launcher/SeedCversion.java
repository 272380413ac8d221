// Writes a ZooKeeper 3.8 snapshot in which persistent nodes exist whose child
// version counter (cversion, the source of sequential nodes' suffixes) stands
// at chosen values, without creating that many children. Used by
// zk_rwlock::launcher (ZkClusterBuilder::seed_cversion), which compiles it
// with javac against the server's jars and runs it on fresh data directories.
//
// Usage: SeedCversion <dataDir> [<dataDir>...] -- <path> <cversion> [<path> <cversion>...]
//
// For each path: the path and its missing parents are created as persistent
// nodes (open ACL), then a child is created with parentCVersion = cversion,
// which sets the path's cversion to that value, and deleted again (a delete
// leaves cversion alone). The resulting tree is saved as a snapshot into
// <dataDir>/version-2 of every data directory, where the server loads it at
// start-up. Each path's cversion is checked after all paths are seeded.

import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.DataTree;
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

        DataTree tree = new DataTree();
        long now = System.currentTimeMillis();
        for (Map.Entry<String, Integer> seed : seeds.entrySet()) {
            String path = seed.getKey();
            createWithParents(tree, path, now);
            String child = path + "/zk-rwlock-seed";
            tree.createNode(child, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, 0, seed.getValue(), ++zxid, now);
            tree.deleteNode(child, ++zxid);
        }
        for (Map.Entry<String, Integer> seed : seeds.entrySet()) {
            DataNode node = tree.getNode(seed.getKey());
            int cversion = node.stat.getCversion();
            if (cversion != seed.getValue() || node.getChildren().size() != 0) {
                System.err.println("SeedCversion: " + seed.getKey() + " has cversion " + cversion + " and "
                        + node.getChildren().size() + " children, wanted cversion " + seed.getValue()
                        + " and none (a later path under it changed it?)");
                System.exit(1);
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
