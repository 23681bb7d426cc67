package coordinator

import (
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/infra"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/metrics"
	"github.com/tierflow/tierflow/runtime/policy"
	"github.com/tierflow/tierflow/runtime/security"
)

// Config configures a coordinator.
type Config struct {
	// Conn is the coordinator's NATS connection.
	Conn *nats.Conn
	// Infra, when set, orders the tiers (and later prices plans); tiers of
	// registered workers it does not name come after its own.
	Infra *infra.Infra
	// Catalog is a catalog YAML file for scripts that name none.
	Catalog string
	// Heartbeat is the interval workers are told to heartbeat at (default
	// 500ms); a worker silent for Expiry (default 3 heartbeats, at least
	// 1.5s) is dropped and the queries it ran are recovered on the others,
	// so a lost worker is noticed within 2s.
	Heartbeat time.Duration
	Expiry    time.Duration
	// DeployTimeout bounds each worker's build of its part (default 20s).
	DeployTimeout time.Duration
	Metrics       *metrics.Registry
	Log           *slog.Logger
	// Exec completes the executor options the coordinator compiles queries
	// with (as the workers' Exec does), so it can place model calls and NATS
	// streams.
	Exec func(o *exec.Options, part deploy.ExecPart)
	// CheckModelArgs, when set, gives the checker of model calls against
	// their files for a script whose relative paths are from baseDir, so a
	// declared tensor shape no model file takes fails the query at bind
	// time (bind.ModelArgChecker); nil: the workers find out when they build.
	CheckModelArgs func(baseDir string) bind.ModelArgChecker
	// Placement chooses how queries are placed: "optimizer" (the default:
	// the planner's physical plan against the registered workers, the
	// default rules when it cannot plan) or "rules" (runtime/deploy's
	// default rules only: sources at their tier, aggregates a tier up, the
	// sink on top, so data crosses every tier).
	Placement string
	// Policies are the policies the coordinator asks (runtime/policy): the
	// per-cluster ones at every placement of a query, the per-query ones
	// about every running query at their cadence, in this order. nil:
	// policy.Defaults(); an empty list: none.
	Policies []policy.Policy
	// ReplanBudget bounds the optimizer's exact search when it plans with
	// a policy's live numbers (default DefaultReplanBudget).
	ReplanBudget time.Duration
	// Admins are the identities (deploy.SubmitSubject's <user>) that may
	// stop any query; everyone else stops only their own.
	Admins []string
	// Authority, when set, is the cluster's authority file (nats-setup's
	// authority.json): each user's data subjects, which bound what its
	// queries read and write, its admin role (as Admins), and the signing
	// key the coordinator mints each part's data user with
	// (deploy.Access.JWT). SetAuthority replaces it while running.
	Authority *security.Authority
	// DataRoots confine the files the coordinator reads to plan a query
	// (catalog, file streams and tables, whose schemas it probes), as a
	// worker's do; nil: none.
	DataRoots *security.Roots
	// Limits bound every query (deploy.Limits): the coordinator refuses a
	// user's submission past QueriesPerUser and fails a query past its
	// RunTime; workers enforce MemoryBytes and RowsInFlight.
	Limits deploy.Limits
	// Bounds bound what one user's submissions take of the coordinator
	// (size, rate, compiles at once) and how long ended queries are kept.
	Bounds Bounds
	// Namespace is the deployment's subject namespace (deploy.InNamespace;
	// "" the default): workers and clients of another namespace on the same
	// server never reach this coordinator.
	Namespace string
}

// Placement modes (Config.Placement).
const (
	PlaceOptimizer = "optimizer"
	PlaceRules     = "rules"
)
