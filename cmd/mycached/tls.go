package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// serverTLSConfig returns the TLS config offered to clients: the pair in
// certFile and keyFile, a fresh self-signed certificate, or nil for none.
func serverTLSConfig(certFile, keyFile string, selfSigned bool) (*tls.Config, error) {
	var cert tls.Certificate
	switch {
	case certFile != "":
		var err error
		if cert, err = tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return nil, fmt.Errorf("--tls-cert: %q with --tls-key %q: %w", certFile, keyFile, err)
		}
	case selfSigned:
		var err error
		if cert, err = selfSignedCert(time.Now()); err != nil {
			return nil, fmt.Errorf("--tls-self-signed: %w", err)
		}
	default:
		return nil, nil
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// selfSignedCert makes an ECDSA P-256 certificate for CN "mycached" with the
// names a loopback sidecar is reached by. It lives only in memory: it is for
// clients that insist on TLS but do not verify, such as the mariadb CLI with
// --ssl, not for anything that checks the chain.
func selfSignedCert(now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "mycached"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		// Backdated an hour so that a client with a slightly slow clock accepts it.
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.AddDate(1, 0, 0),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
