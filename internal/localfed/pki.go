package localfed

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// clockSkew back-dates certificates a little so that they are valid at once.
	clockSkew = time.Hour
)

// authority is a certificate authority kept in memory.
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

// newAuthority creates a self-signed CA.
func newAuthority(commonName string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	tmpl, err := template(commonName, caValidity)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing CA %s: %w", commonName, err)
	}
	return &authority{cert: cert, key: key, certPEM: encodePEM("CERTIFICATE", der)}, nil
}

// issue signs a new key pair for tmpl and returns both PEM encoded.
func (a *authority) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing %s: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodePEM("CERTIFICATE", der), keyPEM, nil
}

// issueServing signs a serving certificate for the local apiserver under
// every name a client may use for it.
func (a *authority) issueServing() (certPEM, keyPEM []byte, err error) {
	tmpl, err := template("kube-apiserver", leafValidity)
	if err != nil {
		return nil, nil, err
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)}
	tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default",
		"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	return a.issue(tmpl)
}

// issueClient signs a client certificate for user in groups, as the
// apiserver's x509 authenticator reads them: CN is the user, O the groups.
func (a *authority) issueClient(user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	tmpl, err := template(user, leafValidity)
	if err != nil {
		return nil, nil, err
	}
	tmpl.Subject.Organization = groups
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return a.issue(tmpl)
}

func template(commonName string, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(validity),
	}, nil
}

func encodePEM(blockType string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding key: %w", err)
	}
	return encodePEM("EC PRIVATE KEY", der), nil
}

// clusterPKI is everything one kube-apiserver needs to serve TLS,
// authenticate clients and sign service account tokens.
type clusterPKI struct {
	servingCA *authority
	clientCA  *authority
	files     map[string][]byte // file name → content
}

// File names in a cluster's directory.
const (
	servingCAFile  = "serving-ca.crt"
	servingCAKey   = "serving-ca.key"
	clientCAKey    = "client-ca.key"
	servingCrtFile = "serving.crt"
	servingKeyFile = "serving.key"
	clientCAFile   = "client-ca.crt"
	adminCrtFile   = "admin.crt"
	adminKeyFile   = "admin.key"
	saKeyFile      = "service-account.key"
	saPubFile      = "service-account.pub"
)

// adminUser is the user of the admin credentials, a member of system:masters.
const adminUser = "fedwarden-admin"

// newClusterPKI generates the CAs, certificates and keys of one cluster.
func newClusterPKI(cluster string) (*clusterPKI, error) {
	servingCA, err := newAuthority("fedwarden-" + cluster + "-serving-ca")
	if err != nil {
		return nil, err
	}
	clientCA, err := newAuthority("fedwarden-" + cluster + "-client-ca")
	if err != nil {
		return nil, err
	}
	p := &clusterPKI{servingCA: servingCA, clientCA: clientCA, files: map[string][]byte{
		servingCAFile: servingCA.certPEM,
		clientCAFile:  clientCA.certPEM,
	}}
	// The CA keys are kept so that a federation started again from its
	// data directory issues the same kind of credentials.
	if p.files[servingCAKey], err = encodeKey(servingCA.key); err != nil {
		return nil, err
	}
	if p.files[clientCAKey], err = encodeKey(clientCA.key); err != nil {
		return nil, err
	}
	if p.files[servingCrtFile], p.files[servingKeyFile], err = servingCA.issueServing(); err != nil {
		return nil, err
	}
	if p.files[adminCrtFile], p.files[adminKeyFile], err = clientCA.issueClient(adminUser, "system:masters"); err != nil {
		return nil, err
	}
	if p.files[saKeyFile], p.files[saPubFile], err = newServiceAccountKey(); err != nil {
		return nil, err
	}
	return p, nil
}

// readClusterPKI loads the files newClusterPKI wrote to dir.
func readClusterPKI(dir string) (*clusterPKI, error) {
	p := &clusterPKI{files: map[string][]byte{}}
	for _, name := range []string{servingCAFile, servingCAKey, servingCrtFile, servingKeyFile, clientCAFile, clientCAKey, adminCrtFile, adminKeyFile, saKeyFile, saPubFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		p.files[name] = data
	}
	var err error
	if p.servingCA, err = readAuthority(p.files[servingCAFile], p.files[servingCAKey]); err != nil {
		return nil, err
	}
	if p.clientCA, err = readAuthority(p.files[clientCAFile], p.files[clientCAKey]); err != nil {
		return nil, err
	}
	return p, nil
}

// readAuthority parses a CA's certificate and key.
func readAuthority(certPEM, keyPEM []byte) (*authority, error) {
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, fmt.Errorf("a CA certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing a CA certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing a CA key: %w", err)
	}
	return &authority{cert: cert, key: key, certPEM: certPEM}, nil
}

// newServiceAccountKey generates the key pair that signs service account tokens.
func newServiceAccountKey() (keyPEM, pubPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("encoding service account key: %w", err)
	}
	keyPEM, err = encodeKey(key)
	return keyPEM, encodePEM("PUBLIC KEY", pub), err
}

// write stores the files in dir, keys readable by the owner only.
func (p *clusterPKI) write(dir string) error {
	for name, data := range p.files {
		mode := os.FileMode(0o644)
		if filepath.Ext(name) == ".key" {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, mode); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
