package shop;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.hibernate.Session;
import org.hibernate.SessionFactory;
import org.hibernate.Transaction;

/**
 * Workload is the application's traffic: a read part of entity loads and
 * order lists over a hot set, then an update part of price changes and
 * order deletions, each followed by staleness checks. Every operation
 * runs in its own Session and transaction, as one web request would.
 */
final class Workload {
    private final SessionFactory a;
    private final SessionFactory b;
    private final boolean queryCache;
    private final Random rnd = new Random(42);
    private final List<Long> loads = new ArrayList<>();
    private final List<Long> queries = new ArrayList<>();

    /** stale counts server A's reads after its own writes that returned old data. */
    int stale;
    int checks;
    /** staleOther counts server B's reads after A's writes that returned old data. */
    int staleOther;
    int checksOther;

    Workload(SessionFactory a, SessionFactory b, boolean queryCache) {
        this.a = a;
        this.b = b;
        this.queryCache = queryCache;
    }

    /** readPart runs n operations: nine entity loads by id to each order list. */
    void readPart(int n) {
        for (int i = 0; i < n; i++) {
            int kind = i % 10;
            if (kind == 9) {
                int c = rnd.nextInt(Main.HOT) + 1;
                long t0 = System.nanoTime();
                List<Order> os = listOrders(a, c);
                queries.add(System.nanoTime() - t0);
                if (os.size() != Main.ORDERS_PER_CUSTOMER) {
                    throw new IllegalStateException("customer " + c + " has " + os.size() + " orders");
                }
                continue;
            }
            Session s = a.openSession();
            Transaction tx = s.beginTransaction();
            long t0 = System.nanoTime();
            Object v;
            switch (kind / 3) {
                case 0: {
                    Customer c = (Customer) s.get(Customer.class, (long) rnd.nextInt(Main.HOT) + 1);
                    v = c.getName();
                    break;
                }
                case 1: {
                    Product p = (Product) s.get(Product.class, (long) rnd.nextInt(Main.HOT) + 1);
                    v = p.getPriceCents();
                    break;
                }
                default: {
                    long id = Main.orderID(rnd.nextInt(Main.HOT) + 1, rnd.nextInt(Main.ORDERS_PER_CUSTOMER));
                    Order o = (Order) s.get(Order.class, id);
                    v = o.getQuantity();
                    break;
                }
            }
            loads.add(System.nanoTime() - t0);
            tx.commit();
            s.close();
            if (v == null) {
                throw new IllegalStateException("null field");
            }
        }
    }

    /**
     * updatePart runs n rounds. Each round both servers read a hot product,
     * A raises its price, and both read it again; then both read a hot
     * order and its customer's order list, A deletes the order, and both
     * read again. A read that returns the old value is a staleness failure.
     */
    void updatePart(int n) {
        for (int r = 0; r < n; r++) {
            long pid = r % Main.HOT + 1;
            price(b, pid);
            long want = price(a, pid) + 1 + r;
            Session s = a.openSession();
            Transaction tx = s.beginTransaction();
            Product p = (Product) s.get(Product.class, pid);
            p.setPriceCents(want);
            tx.commit();
            s.close();
            checks++;
            if (price(a, pid) != want) {
                stale++;
            }
            checksOther++;
            if (price(b, pid) != want) {
                staleOther++;
            }

            int c = r % Main.HOT + 1;
            long oid = Main.orderID(c, (r / Main.HOT) % Main.ORDERS_PER_CUSTOMER);
            listOrders(a, c);
            listOrders(b, c);
            exists(a, oid);
            exists(b, oid);
            s = a.openSession();
            tx = s.beginTransaction();
            Order o = (Order) s.get(Order.class, oid);
            if (o == null) {
                throw new IllegalStateException("order " + oid + " is gone before its delete");
            }
            s.delete(o);
            tx.commit();
            s.close();
            checks += 2;
            if (exists(a, oid)) {
                stale++;
            }
            if (listed(a, c, oid)) {
                stale++;
            }
            checksOther += 2;
            if (exists(b, oid)) {
                staleOther++;
            }
            if (listed(b, c, oid)) {
                staleOther++;
            }
        }
    }

    private long price(SessionFactory f, long pid) {
        Session s = f.openSession();
        Transaction tx = s.beginTransaction();
        try {
            return ((Product) s.get(Product.class, pid)).getPriceCents();
        } finally {
            tx.commit();
            s.close();
        }
    }

    private boolean exists(SessionFactory f, long oid) {
        Session s = f.openSession();
        Transaction tx = s.beginTransaction();
        try {
            return s.get(Order.class, oid) != null;
        } finally {
            tx.commit();
            s.close();
        }
    }

    private boolean listed(SessionFactory f, int c, long oid) {
        for (Order o : listOrders(f, c)) {
            if (o.getId() == oid) {
                return true;
            }
        }
        return false;
    }

    @SuppressWarnings("unchecked")
    private List<Order> listOrders(SessionFactory f, int c) {
        Session s = f.openSession();
        Transaction tx = s.beginTransaction();
        try {
            List<Order> os = s.createQuery("from Order o where o.customer.id = :c order by o.id")
                    .setLong("c", c)
                    .setCacheable(queryCache)
                    .list();
            for (Order o : os) {
                o.getQuantity();
            }
            return os;
        } finally {
            tx.commit();
            s.close();
        }
    }

    long[] loadNanos() {
        return toArray(loads);
    }

    long[] queryNanos() {
        return toArray(queries);
    }

    private static long[] toArray(List<Long> v) {
        long[] out = new long[v.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = v.get(i);
        }
        return out;
    }
}
