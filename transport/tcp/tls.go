package tcp

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// LoadTLS returns a Config.TLS from PEM files: this node's certificate
// (certFile, possibly followed by intermediate certificates) and private
// key (keyFile), and the certificates of the CA that signs every node's
// certificate (caFile). It checks that the key matches the certificate
// and that the certificate is valid now and signed by the CA, so that a
// mistake is named before any link is dialled. Errors name the file.
func LoadTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("tls certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls key: %w", err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls CA: %w", err)
	}
	chain, err := parseCerts(certPEM)
	if err != nil {
		return nil, fmt.Errorf("tls certificate %s: %w", certFile, err)
	}
	cas, err := parseCerts(caPEM)
	if err != nil {
		return nil, fmt.Errorf("tls CA %s: %w", caFile, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls key %s for certificate %s: %w", keyFile, certFile, err)
	}
	roots := x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: time.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	if _, err := chain[0].Verify(opts); err != nil {
		return nil, fmt.Errorf("tls certificate %s against the CA %s: %w", certFile, caFile, err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      roots,
		ClientCAs:    roots,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// parseCerts parses the CERTIFICATE blocks of a PEM file; it needs at
// least one and no other kind of block.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("a PEM block of type %q, want CERTIFICATE", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate in it")
	}
	return out, nil
}

// tlsRefused reports whether err, from the dialer's side of a TLS link's
// set-up, says that the two ends cannot agree: the peer refused this
// node's certificate or TLS itself (a TLS alert), this node refused the
// peer's certificate, or the peer does not speak TLS.
func tlsRefused(err error) bool {
	var op *net.OpError
	var verr *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	return errors.As(err, &op) && op.Op == "remote error" || errors.As(err, &verr) || errors.As(err, &rh)
}

// tlsConfigs returns the TLS configurations of the two ends of a link
// from base: TLS 1.3 only, a certificate required from the client and
// verified against the CA, no session tickets (every link is dialled
// once and kept). Without base.ServerName the client verifies the
// server's certificate against the CA and not a host name: nodes dial
// each other by address, and a certificate proves that its holder belongs
// to the cluster, not where it runs.
func tlsConfigs(base *tls.Config) (server, client *tls.Config) {
	server = base.Clone()
	server.MinVersion = tls.VersionTLS13
	server.ClientAuth = tls.RequireAndVerifyClientCert
	if server.ClientCAs == nil {
		server.ClientCAs = base.RootCAs
	}
	server.SessionTicketsDisabled = true
	server.DynamicRecordSizingDisabled = true

	client = base.Clone()
	client.MinVersion = tls.VersionTLS13
	client.DynamicRecordSizingDisabled = true
	if client.GetClientCertificate == nil && len(client.Certificates) > 0 {
		// Present the certificate even when the server names other CAs,
		// which Go's client would answer with none: the server then says
		// what is wrong with it (signed by an unknown authority), not
		// that it is missing.
		cert := &client.Certificates[0]
		client.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	if client.ServerName == "" {
		roots := client.RootCAs
		// The standard verification needs a host name; the chain is
		// verified below instead, against the same roots.
		client.InsecureSkipVerify = true
		client.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the peer sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
				return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
			}
			return nil
		}
	}
	return server, client
}
