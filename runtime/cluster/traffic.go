package cluster

import (
	"errors"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/tierflow/tierflow/runtime/worker"
)

// Traffic is what the cluster's NATS server has received so far from its
// clients, messages and payload bytes, split into the workers' relay
// connections (the batches, progress and acks crossing between workers:
// what an exchange costs) and every other connection (heartbeats,
// deployments, status, the sink's rows to a client). Closed connections
// count while the server still lists them.
type Traffic struct {
	RelayMsgs, RelayBytes int64
	OtherMsgs, OtherBytes int64
}

// Sub is t less an earlier reading u: what crossed between the two.
func (t Traffic) Sub(u Traffic) Traffic {
	return Traffic{t.RelayMsgs - u.RelayMsgs, t.RelayBytes - u.RelayBytes, t.OtherMsgs - u.OtherMsgs, t.OtherBytes - u.OtherBytes}
}

// Traffic reads the in-process NATS server's connections (an error when
// the cluster runs on an external server: its counters are not this
// process's to read).
func (c *Cluster) Traffic() (Traffic, error) {
	if c.server == nil {
		return Traffic{}, errors.New("cluster: no NATS server in this process")
	}
	var t Traffic
	for offset := 0; ; {
		cz, err := c.server.NATS().Connz(&server.ConnzOptions{State: server.ConnAll, Offset: offset, Limit: 1024})
		if err != nil {
			return Traffic{}, err
		}
		for _, ci := range cz.Conns {
			if strings.HasPrefix(ci.Name, worker.RelayConnPrefix) {
				t.RelayMsgs += ci.InMsgs
				t.RelayBytes += ci.InBytes
			} else {
				t.OtherMsgs += ci.InMsgs
				t.OtherBytes += ci.InBytes
			}
		}
		offset += len(cz.Conns)
		if len(cz.Conns) == 0 || offset >= cz.Total {
			return t, nil
		}
	}
}
