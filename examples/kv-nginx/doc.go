// Package kvnginx holds the test of the kv-nginx example: JSON written
// with the key/value pseudo-queries over the MySQL protocol, stored raw in
// memcached by mycached's kv-only listener, and served over HTTP by
// nginx's memcached_pass. README.md describes the setup.
package kvnginx
