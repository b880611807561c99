package shop;

import javax.persistence.Column;
import javax.persistence.Entity;
import javax.persistence.Id;
import javax.persistence.Table;

/** Product is a row of table product; its price is in cents. */
@Entity
@Table(name = "product")
public class Product {
    @Id
    private long id;

    @Column(nullable = false)
    private String name;

    @Column(name = "price_cents", nullable = false)
    private long priceCents;

    protected Product() {}

    public Product(long id, String name, long priceCents) {
        this.id = id;
        this.name = name;
        this.priceCents = priceCents;
    }

    public long getId() { return id; }
    public String getName() { return name; }
    public long getPriceCents() { return priceCents; }
    public void setPriceCents(long priceCents) { this.priceCents = priceCents; }
}
