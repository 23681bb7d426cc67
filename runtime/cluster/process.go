package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tierflow/tierflow/relay/natsserver"
)

// ProcessOptions configure StartProcesses.
type ProcessOptions struct {
	Options
	// Binary is the tierflow executable the workers run (default: this
	// process's own executable, which is right for the tierflow CLI).
	Binary string
	// Stderr receives the workers' logs (default io.Discard).
	Stderr io.Writer
	// Env is added to the workers' environment.
	Env []string
	// ProfileDir, when set, has each worker write a CPU profile of its
	// process to ProfileDir/NAME.pprof until it leaves.
	ProfileDir string
}

// process is one worker child process.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	once sync.Once
}

// StartProcesses is StartEmbedded with every worker a child process
// (`tierflow worker --nats URL --name N --tier T ...`) instead of goroutines
// in this process: the server and the coordinator stay here. It returns once
// every worker has registered.
func StartProcesses(ctx context.Context, o ProcessOptions) (*Cluster, error) {
	c, err := startCore(&o.Options)
	if err != nil {
		return nil, err
	}
	bin := o.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			c.Close()
			return nil, err
		}
	}
	stderr := o.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	ms := o.Infra.Machines()
	for _, m := range ms {
		// Credentials in the URL move to flags and the environment: a
		// command line is visible to every user of the machine (ps).
		url, authFlags, authEnv := ChildAuth(c.url, o.Auth)
		// The workers are the invoking user's own, running only the
		// user's queries: they read its files as tierflow run does, on
		// a secured server too (--any-file).
		args := []string{"worker", "--nats", url, "--name", WorkerName(m.Name), "--tier", m.Tier, "--any-file"}
		if m.Location != "" {
			args = append(args, "--location", m.Location)
		}
		if m.Type != nil {
			args = append(args, "--type", m.Type.Name)
		}
		if o.OrtLib != "" {
			args = append(args, "--ort-lib", o.OrtLib)
		}
		if o.Namespace != "" {
			args = append(args, "--namespace", o.Namespace)
		}
		if o.Heartbeat > 0 {
			args = append(args, "--heartbeat", o.Heartbeat.String())
		}
		args = append(args, "--threads", strconv.Itoa(CPUShare(m, len(ms))))
		if o.Sched != "" {
			args = append(args, "--sched", o.Sched)
		}
		if o.EvidenceDir != "" {
			args = append(args, "--evidence", o.EvidenceDir)
		}
		if o.ProfileDir != "" {
			args = append(args, "--cpuprofile", filepath.Join(o.ProfileDir, WorkerName(m.Name)+".pprof"))
		}
		args = append(args, authFlags...)
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		cmd.Env = append(append(os.Environ(), o.Env...), authEnv...)
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			c.Close()
			return nil, fmt.Errorf("start worker %s: %w", m.Name, err)
		}
		p := &process{name: WorkerName(m.Name), cmd: cmd, done: make(chan struct{})}
		go func() { p.err = cmd.Wait(); close(p.done) }()
		c.procs = append(c.procs, p)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := c.WaitWorkers(wctx, len(ms)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Kill ends worker process name at once (SIGKILL), as a crash or a lost
// machine would: no goodbye, no flushed status. The coordinator notices when
// its heartbeats stop. For failure tests and drills.
func (c *Cluster) Kill(name string) error {
	for _, p := range c.procs {
		if p.name == name {
			var err error
			p.once.Do(func() {
				err = p.cmd.Process.Kill()
				<-p.done
			})
			return err
		}
	}
	return fmt.Errorf("cluster: no worker process %q", name)
}

// ProcessCPU is the CPU time (user and system) the cluster's worker
// processes have used so far, all of them together, those that have left
// included: what a benchmark divides by its work, a figure that holds on
// a shared machine where wall time does not. An embedded cluster has no
// worker processes: its workers' CPU is this process's.
func (c *Cluster) ProcessCPU() (time.Duration, error) {
	if len(c.procs) == 0 {
		return 0, errors.New("cluster: no worker processes (embedded workers run in this process)")
	}
	var sum time.Duration
	for _, p := range c.procs {
		select {
		case <-p.done:
			// Reaped: its /proc entry is gone, its rusage is final.
			if st := p.cmd.ProcessState; st != nil {
				sum += st.UserTime() + st.SystemTime()
			}
			continue
		default:
		}
		d, err := processCPU(p.cmd.Process.Pid)
		if err != nil {
			return 0, fmt.Errorf("cluster: worker %s: %w", p.name, err)
		}
		sum += d
	}
	return sum, nil
}

// stop asks the child to leave (SIGINT: it aborts its queries and exits)
// and kills it if it has not within a few seconds.
func (p *process) stop() error {
	var err error
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		var ee *exec.ExitError
		if p.err != nil && !errors.As(p.err, &ee) {
			err = p.err
		}
	})
	return err
}

// ChildAuth is how a child tierflow process gets a connection to url with
// a's credentials: url without any user:password@ (a command line is
// visible to every user of the machine: ps), the connection flags that
// name the files (creds, nkey, TLS) and the user, and the environment that
// carries a password.
func ChildAuth(url string, a natsserver.Auth) (bare string, flags, env []string) {
	bare, a = splitCredentials(url, a)
	if a.Password != "" {
		env = []string{"TIERFLOW_NATS_PASSWORD=" + a.Password}
	}
	return bare, authArgs(a), env
}

// authArgs are the connection flags that give a worker process a's
// credentials; a password travels in the environment instead.
func authArgs(a natsserver.Auth) []string {
	var out []string
	for _, f := range []struct{ flag, v string }{{"--nats-creds", a.Creds}, {"--nats-nkey", a.NKey}, {"--nats-user", a.User},
		{"--tls-ca", a.TLSCA}, {"--tls-cert", a.TLSCert}, {"--tls-key", a.TLSKey}} {
		if f.v != "" {
			out = append(out, f.flag, f.v)
		}
	}
	return out
}

// splitCredentials takes the user:password@ out of the URLs in raw into a
// (unless a already names a user or other credentials).
func splitCredentials(raw string, a natsserver.Auth) (string, natsserver.Auth) {
	var out []string
	for _, u := range strings.Split(raw, ",") {
		pu, err := neturl.Parse(strings.TrimSpace(u))
		if err != nil || pu.User == nil {
			out = append(out, u)
			continue
		}
		if a.User == "" && a.Creds == "" && a.NKey == "" {
			a.User = pu.User.Username()
			a.Password, _ = pu.User.Password()
		}
		pu.User = nil
		out = append(out, pu.String())
	}
	return strings.Join(out, ","), a
}
