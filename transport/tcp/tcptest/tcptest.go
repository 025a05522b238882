// Package tcptest makes throwaway certificates for tests of colo's TLS
// links: a CA and node certificates it signs, ECDSA P-256, in PEM.
//
//	ca, _ := tcptest.NewCA("cluster")
//	files, _ := ca.WriteNode(t.TempDir(), "node")
//	cfg, _ := tcp.LoadTLS(files.Cert, files.Key, files.CA)
package tcptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA returns a self-signed CA named name, valid for a day.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// PEM returns the CA's certificate.
func (ca *CA) PEM() []byte { return ca.pem }

// Issue returns a certificate for name signed by ca, for both ends of a
// TLS connection (server and client authentication), and its key.
func (ca *CA) Issue(name string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// Files are the paths of a node's certificate, its key and the CA's
// certificate.
type Files struct{ Cert, Key, CA string }

// WriteNode issues a certificate for name and writes it, its key and the
// CA's certificate to dir as NAME.crt, NAME.key and NAME-ca.crt.
func (ca *CA) WriteNode(dir, name string) (Files, error) {
	cert, key, err := ca.Issue(name)
	if err != nil {
		return Files{}, err
	}
	f := Files{
		Cert: filepath.Join(dir, name+".crt"),
		Key:  filepath.Join(dir, name+".key"),
		CA:   filepath.Join(dir, name+"-ca.crt"),
	}
	for path, data := range map[string][]byte{f.Cert: cert, f.Key: key, f.CA: ca.pem} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return Files{}, fmt.Errorf("tcptest: %w", err)
		}
	}
	return f, nil
}

// serial returns a random certificate serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}
