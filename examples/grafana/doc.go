// Package grafana holds the test of the Grafana example: mycached.json, a
// dashboard of the metrics mycached serves at /metrics.
package grafana
