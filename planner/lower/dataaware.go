package lower

import "github.com/tierflow/tierflow/planner/catalog"

// classMix is the class mix a DATA AWARE query's model m is planned for:
// the estimate Options.ClassMix carries, when the model has a per-class
// profile to weigh; nil (profiled accuracy) otherwise.
func (l *lowerer) classMix(m *catalog.Model) map[string]float64 {
	if !l.dataAware || m == nil {
		return nil
	}
	mix := l.opt.ClassMix[m.Name]
	if len(mix) == 0 {
		return nil
	}
	for _, v := range m.Variants {
		if len(v.Classes) > 0 {
			return mix
		}
	}
	return nil
}
