// Package systemd holds the test of the systemd example: mycached.service,
// a hardened unit that README.md describes.
package systemd
