package shop;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.hibernate.SessionFactory;
import org.hibernate.cfg.Configuration;

/**
 * Main runs one workload of the example against one setup, chosen by the
 * first argument:
 *
 * <pre>
 *   nocache   the application talks to MariaDB with no second-level cache
 *   ehcache   the same, with Hibernate's Ehcache entity and query caches
 *   mycached  the application talks to mycached, with no cache of its own
 * </pre>
 *
 * The other arguments are key=value: url (the application's JDBC URL),
 * url_b (server B's JDBC URL, by default url; for example a second
 * mycached sidecar), direct (a JDBC URL straight to MariaDB, for its status counters), reads
 * and updates (how many operations of each part). It prints a report and
 * one machine-readable line that starts with RESULT.
 *
 * Two SessionFactory objects stand for two application servers, A and B.
 * A does the reads and the writes; B reads the rows A changes, before and
 * after, which is what a second application server behind a load balancer
 * would do.
 */
public final class Main {
    static final int CUSTOMERS = 200;
    static final int PRODUCTS = 200;
    static final int ORDERS_PER_CUSTOMER = 10;
    /** The hot set: the first HOT customers and products, and their orders. */
    static final int HOT = 20;

    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage();
        }
        String mode = args[0];
        Map<String, String> opt = new HashMap<>();
        for (String a : Arrays.copyOfRange(args, 1, args.length)) {
            int eq = a.indexOf('=');
            if (eq < 0) {
                usage();
            }
            opt.put(a.substring(0, eq), a.substring(eq + 1));
        }
        String url = require(opt, "url");
        String urlB = opt.getOrDefault("url_b", url);
        String direct = require(opt, "direct");
        int reads = Integer.parseInt(opt.getOrDefault("reads", "20000"));
        int updates = Integer.parseInt(opt.getOrDefault("updates", "50"));
        boolean ehcache;
        switch (mode) {
            case "nocache":
            case "mycached":
                ehcache = false;
                break;
            case "ehcache":
                ehcache = true;
                break;
            default:
                usage();
                return;
        }

        // Seed through the application's URL, so that in the mycached run
        // the writes pass through mycached like any other write.
        seed(url);

        SessionFactory a = factory(url, ehcache, "a");
        SessionFactory b = factory(urlB, ehcache, "b");
        try (Connection status = DriverManager.getConnection(direct)) {
            Workload w = new Workload(a, b, ehcache);
            long s0 = comSelect(status);
            w.readPart(reads);
            long s1 = comSelect(status);
            w.updatePart(updates);
            long s2 = comSelect(status);
            report(mode, w, s1 - s0, s2 - s1, a);
        } finally {
            a.close();
            b.close();
        }
    }

    private static void usage() {
        System.err.println("usage: shop.Main nocache|ehcache|mycached url=JDBC_URL [url_b=JDBC_URL] direct=JDBC_URL"
                + " [reads=N] [updates=N]");
        System.exit(2);
    }

    private static String require(Map<String, String> opt, String key) {
        String v = opt.get(key);
        if (v == null || v.isEmpty()) {
            usage();
        }
        return v;
    }

    /** factory builds one application server's SessionFactory. */
    static SessionFactory factory(String url, boolean ehcache, String node) {
        Configuration cfg = new Configuration();
        Properties p = new Properties();
        p.setProperty("hibernate.dialect", "org.hibernate.dialect.MySQL5InnoDBDialect");
        p.setProperty("hibernate.connection.driver_class", "org.mariadb.jdbc.Driver");
        p.setProperty("hibernate.connection.url", url);
        p.setProperty("hibernate.connection.pool_size", "2");
        p.setProperty("hibernate.generate_statistics", "true");
        if (ehcache) {
            p.setProperty("hibernate.cache.use_second_level_cache", "true");
            p.setProperty("hibernate.cache.use_query_cache", "true");
            p.setProperty("hibernate.cache.region.factory_class", "org.hibernate.cache.EhCacheRegionFactory");
            // Each SessionFactory gets its own CacheManager, as on two
            // application servers: Ehcache refuses two managers of one name.
            p.setProperty("net.sf.ehcache.configurationResourceName", "/ehcache-" + node + ".xml");
        } else {
            p.setProperty("hibernate.cache.use_second_level_cache", "false");
            p.setProperty("hibernate.cache.use_query_cache", "false");
        }
        cfg.setProperties(p);
        cfg.addAnnotatedClass(Customer.class);
        cfg.addAnnotatedClass(Product.class);
        cfg.addAnnotatedClass(Order.class);
        if (ehcache) {
            // The cache settings live here rather than in annotations, so
            // the entity classes are the same in every run.
            for (Class<?> c : new Class<?>[] {Customer.class, Product.class, Order.class}) {
                cfg.setCacheConcurrencyStrategy(c.getName(), "read-write");
            }
        }
        return cfg.buildSessionFactory();
    }

    /** seed empties the tables and fills them with the same rows each run. */
    static void seed(String url) throws SQLException {
        try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
            c.setAutoCommit(true);
            st.executeUpdate("DELETE FROM orders");
            st.executeUpdate("DELETE FROM product");
            st.executeUpdate("DELETE FROM customer");
            StringBuilder sb = new StringBuilder("INSERT INTO customer (id, name, email) VALUES ");
            for (int i = 1; i <= CUSTOMERS; i++) {
                sb.append(i > 1 ? "," : "").append('(').append(i).append(",'customer ").append(i)
                        .append("','c").append(i).append("@example.com')");
            }
            st.executeUpdate(sb.toString());
            sb = new StringBuilder("INSERT INTO product (id, name, price_cents) VALUES ");
            for (int i = 1; i <= PRODUCTS; i++) {
                sb.append(i > 1 ? "," : "").append('(').append(i).append(",'product ").append(i)
                        .append("',").append(100 * i).append(')');
            }
            st.executeUpdate(sb.toString());
            sb = new StringBuilder("INSERT INTO orders (id, customer_id, product_id, quantity) VALUES ");
            for (int c2 = 1; c2 <= CUSTOMERS; c2++) {
                for (int k = 0; k < ORDERS_PER_CUSTOMER; k++) {
                    long id = orderID(c2, k);
                    int product = (c2 * 7 + k * 13) % PRODUCTS + 1;
                    sb.append(id > 1 ? "," : "").append('(').append(id).append(',').append(c2).append(',')
                            .append(product).append(',').append(k + 1).append(')');
                }
            }
            st.executeUpdate(sb.toString());
        }
    }

    /** orderID is the id of customer c's k-th order (k from 0). */
    static long orderID(int c, int k) {
        return (long) (c - 1) * ORDERS_PER_CUSTOMER + k + 1;
    }

    /** comSelect reads MariaDB's Com_select over a connection that bypasses any proxy. */
    static long comSelect(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SHOW GLOBAL STATUS LIKE 'Com_select'")) {
            if (!rs.next()) {
                throw new SQLException("no Com_select in SHOW GLOBAL STATUS");
            }
            return rs.getLong(2);
        }
    }

    private static void report(String mode, Workload w, long selRead, long selUpdate, SessionFactory a) {
        long[] lat = w.loadNanos();
        long[] q = w.queryNanos();
        System.out.printf("mode=%s%n", mode);
        System.out.printf("  read part:   %d entity loads, %d order-list queries%n", lat.length, q.length);
        System.out.printf("  load latency: avg %.1f us, p50 %.1f us, p99 %.1f us%n",
                avg(lat) / 1e3, pct(lat, 50) / 1e3, pct(lat, 99) / 1e3);
        System.out.printf("  query latency: avg %.1f us, p50 %.1f us%n", avg(q) / 1e3, pct(q, 50) / 1e3);
        System.out.printf("  MariaDB Com_select: read part %d, update part %d%n", selRead, selUpdate);
        System.out.printf("  staleness failures: %d of %d checks (server A); %d of %d (server B)%n",
                w.stale, w.checks, w.staleOther, w.checksOther);
        long l2hits = a.getStatistics().getSecondLevelCacheHitCount();
        System.out.printf("RESULT mode=%s loads=%d avg_us=%.1f p50_us=%.1f p99_us=%.1f query_avg_us=%.1f query_p50_us=%.1f"
                + " com_select_read=%d com_select_update=%d stale=%d checks=%d stale_other=%d checks_other=%d"
                + " l2_hits=%d%n",
                mode, lat.length, avg(lat) / 1e3, pct(lat, 50) / 1e3, pct(lat, 99) / 1e3, avg(q) / 1e3,
                pct(q, 50) / 1e3, selRead, selUpdate, w.stale, w.checks, w.staleOther, w.checksOther, l2hits);
    }

    static double avg(long[] v) {
        if (v.length == 0) {
            return 0;
        }
        double s = 0;
        for (long x : v) {
            s += x;
        }
        return s / v.length;
    }

    static double pct(long[] v, int p) {
        if (v.length == 0) {
            return 0;
        }
        long[] s = v.clone();
        Arrays.sort(s);
        int i = (int) Math.ceil(p / 100.0 * s.length) - 1;
        return s[Math.max(0, Math.min(i, s.length - 1))];
    }
}
