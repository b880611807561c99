-- The example's schema. run.sh loads it into a private MariaDB; the
-- application fills the tables at the start of each run.
CREATE TABLE customer (
  id    BIGINT NOT NULL PRIMARY KEY,
  name  VARCHAR(100) NOT NULL,
  email VARCHAR(100) NOT NULL
) ENGINE=InnoDB;

CREATE TABLE product (
  id          BIGINT NOT NULL PRIMARY KEY,
  name        VARCHAR(100) NOT NULL,
  price_cents BIGINT NOT NULL
) ENGINE=InnoDB;

CREATE TABLE orders (
  id          BIGINT NOT NULL PRIMARY KEY,
  customer_id BIGINT NOT NULL,
  product_id  BIGINT NOT NULL,
  quantity    INT NOT NULL,
  KEY (customer_id),
  CONSTRAINT FOREIGN KEY (customer_id) REFERENCES customer (id),
  CONSTRAINT FOREIGN KEY (product_id) REFERENCES product (id)
) ENGINE=InnoDB;
