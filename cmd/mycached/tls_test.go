package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSelfSignedCert(t *testing.T) {
	now := time.Now()
	cert, err := selfSignedCert(now)
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if got := leaf.Subject.CommonName; got != "mycached" {
		t.Errorf("CN: got %q, want mycached", got)
	}
	key, ok := cert.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		t.Errorf("key: got %T, want an ECDSA P-256 key", cert.PrivateKey)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, CurrentTime: now}); err != nil {
			t.Errorf("verify for %s: %v", host, err)
		}
	}
}

// TestServerTLSConfigFromFiles writes a pair to disk and checks that a TLS
// client trusting it can complete a handshake with the loaded config.
func TestServerTLSConfigFromFiles(t *testing.T) {
	dir := t.TempDir()
	cert, err := selfSignedCert(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}

	cfg, err := serverTLSConfig(certFile, keyFile, false)
	if err != nil {
		t.Fatalf("serverTLSConfig: %v", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	c.Close()

	if cfg, err := serverTLSConfig("", "", false); cfg != nil || err != nil {
		t.Errorf("no cert: got %v, %v; want nil, nil", cfg, err)
	}
}
