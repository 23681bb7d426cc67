package cluster

import (
	"errors"
	"fmt"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/coordinator"
)

// ErrNoServer: the cluster runs on an external NATS server, which it cannot
// stop or start.
var ErrNoServer = errors.New("cluster: no in-process NATS server")

// StopServer shuts the cluster's in-process NATS server down, as an outage
// of the server would: every connection of the cluster (coordinator,
// workers, client) loses it and keeps trying to reconnect. For outage tests
// and drills; StartServer brings it back.
func (c *Cluster) StopServer() error {
	if c.server == nil {
		return ErrNoServer
	}
	c.server.Shutdown()
	return nil
}

// StartServer starts the in-process NATS server again after StopServer, on
// the same port and with the same JetStream store, so the connections find
// it where they left it and JetStream streams keep what they held.
func (c *Cluster) StartServer() error {
	if c.server == nil {
		return ErrNoServer
	}
	u, err := neturl.Parse(c.url)
	if err != nil {
		return fmt.Errorf("cluster: server URL %s: %w", natsserver.Redact(c.url), err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return fmt.Errorf("cluster: server URL %s has no port", natsserver.Redact(c.url))
	}
	// The port was free a moment ago; another listener on the machine may
	// hold it for a moment (the kernel hands out free ports): try a while.
	for deadline := time.Now().Add(5 * time.Second); ; {
		srv, err := natsserver.Start(natsserver.Options{JetStream: true, StoreDir: c.storeDir, ConfigFile: c.serverCfg, Port: port})
		if err == nil {
			c.server = srv
			return nil
		}
		if !strings.Contains(err.Error(), "address already in use") || time.Now().After(deadline) {
			return fmt.Errorf("cluster: restarting the NATS server on port %d: %w", port, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// RestartCoordinator stops the cluster's coordinator, as a crash of its
// process would (running queries keep running on their workers), and
// starts a new one on a connection of its own, which learns the running
// queries back from the workers. For restart tests and drills.
func (c *Cluster) RestartCoordinator() error {
	if c.Coordinator != nil {
		_ = c.Coordinator.Close()
	}
	nc, err := c.connect("tierflow-coordinator")
	if err != nil {
		return err
	}
	cfg := c.coCfg
	cfg.Conn = nc
	co, err := coordinator.Start(cfg)
	if err != nil {
		return err
	}
	c.Coordinator = co
	return nil
}
