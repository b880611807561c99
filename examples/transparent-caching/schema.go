package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"strings"
)

// schema is the shop. Stock lives in its own table, as inventory usually
// does: a write invalidates every cached read of its table but the
// primary-key lookups of other rows, so keeping the often-written stock
// apart from the rarely written catalog lets product lists, order reads and
// aggregates stay cached while stock changes.
var schema = []string{
	"DROP TABLE IF EXISTS orders, inventory, products, customers",
	`CREATE TABLE customers (
		id INT PRIMARY KEY,
		name VARCHAR(64) NOT NULL,
		email VARCHAR(128) NOT NULL
	)`,
	`CREATE TABLE products (
		id INT PRIMARY KEY,
		name VARCHAR(64) NOT NULL,
		description VARCHAR(255) NOT NULL,
		price DECIMAL(10,2) NOT NULL
	)`,
	`CREATE TABLE inventory (
		product_id INT PRIMARY KEY,
		qty INT NOT NULL
	)`,
	`CREATE TABLE orders (
		id INT AUTO_INCREMENT PRIMARY KEY,
		customer_id INT NOT NULL,
		product_id INT NOT NULL,
		qty INT NOT NULL,
		created_at DATETIME NOT NULL,
		KEY (customer_id)
	)`,
}

// seedBatch is the number of rows per INSERT: large enough to load quickly,
// small enough to stay far below max_allowed_packet.
const seedBatch = 500

// setup drops and recreates the shop tables and fills them with the same
// rows on every run.
func setup(ctx context.Context, db *sql.DB, c config) error {
	for _, s := range schema {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	rng := rand.New(rand.NewSource(1))
	tables := []struct {
		head string
		n    int
		row  func(i int) string
	}{
		{"INSERT INTO customers (id, name, email) VALUES ", c.customers, func(i int) string {
			return fmt.Sprintf("(%d,'customer %d','c%d@example.com')", i, i, i)
		}},
		{"INSERT INTO products (id, name, description, price) VALUES ", c.products, func(i int) string {
			return fmt.Sprintf("(%d,'product %d','the description of product %d',%d.%02d)", i, i, i, 1+rng.Intn(200), rng.Intn(100))
		}},
		{"INSERT INTO inventory (product_id, qty) VALUES ", c.products, func(i int) string {
			return fmt.Sprintf("(%d,%d)", i, rng.Intn(500))
		}},
		{"INSERT INTO orders (customer_id, product_id, qty, created_at) VALUES ", c.orders, func(i int) string {
			return fmt.Sprintf("(%d,%d,%d,'2024-01-01' + INTERVAL %d MINUTE)",
				1+rng.Intn(c.customers), 1+rng.Intn(c.products), 1+rng.Intn(5), i)
		}},
	}
	for _, t := range tables {
		rows := make([]string, 0, seedBatch)
		for i := 1; i <= t.n; i++ {
			rows = append(rows, t.row(i))
			if len(rows) == seedBatch || i == t.n {
				if _, err := db.ExecContext(ctx, t.head+strings.Join(rows, ",")); err != nil {
					return fmt.Errorf("setup: seed: %w", err)
				}
				rows = rows[:0]
			}
		}
	}
	return nil
}
