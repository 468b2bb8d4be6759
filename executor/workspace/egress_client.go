package workspace

import (
	"errors"
	"net/http"
	"time"
)

// ErrNoEgressList is returned by EgressTransport when the deployment has
// no egress list: the service cannot then hold a connection it makes on a
// Ticket's behalf to what the Ticket's sandbox may reach.
var ErrNoEgressList = errors.New("the sandbox has no egress list (" + egressSetting + ")")

// EgressTransport returns an HTTP transport for connections the service
// makes on behalf of ticket's sandbox: it reaches only the hosts of the
// egress list, with the egress proxy's checks (the address it resolved
// and checked, never one on the host's side). Its idle connections are
// the caller's to close.
func (m *Manager) EgressTransport(ticket int64) (*http.Transport, error) {
	if len(m.cfg.egress) == 0 {
		return nil, ErrNoEgressList
	}
	p, err := m.egressChecks(ticket)
	if err != nil {
		return nil, err
	}
	return &http.Transport{
		Proxy:                 nil, // never the host's own proxy settings
		DialContext:           p.dialChecked,
		MaxIdleConns:          4,
		IdleConnTimeout:       p.idle,
		TLSHandshakeTimeout:   egressDialTimeout,
		ResponseHeaderTimeout: 2 * time.Minute,
	}, nil
}

// EgressAllows reports whether the egress list names host:port.
func (m *Manager) EgressAllows(host string, port int) bool {
	return egressAllowed(m.cfg.egress, normalizeHost(host), port)
}
