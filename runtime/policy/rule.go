package policy

import "github.com/tierflow/tierflow/runtime/control"

// Rule is a per-query policy whose state is a decision rule that keeps
// nothing of its own per query (control.SlowLink, control.Drift: what
// they judge is in control.PolicyInput), asked at cadence.
func Rule(name string, cadence Cadence, rule control.Policy) Query {
	return ruleQuery{name: name, cadence: cadence, rule: rule}
}

type ruleQuery struct {
	name    string
	cadence Cadence
	rule    control.Policy
}

func (r ruleQuery) Name() string                  { return r.name }
func (r ruleQuery) Cadence() Cadence              { return r.cadence }
func (r ruleQuery) Attach(*Placed) control.Policy { return r.rule }
