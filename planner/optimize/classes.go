package optimize

// Workers that are interchangeable (same tier and location, price, capacities,
// and links to and from every other worker and source) form a class. Swapping
// two members of a class maps every plan to one of the same cost and
// feasibility, so the searches only ever take the first free members of a class:
// on the Table-4 setups (many identical VMs) that shrinks the search from
// subsets of workers to counts per class, without losing optimality.

type wclass struct {
	members []int // worker indices, ascending
	tier    int
}

func (in *instance) classes() (cls []wclass, classOf []int) {
	classOf = make([]int, in.nW)
	for w := range in.nW {
		placed := false
		for c := range cls {
			ok := true
			for _, m := range cls[c].members {
				if !in.swappable(m, w) {
					ok = false
					break
				}
			}
			if ok {
				cls[c].members = append(cls[c].members, w)
				classOf[w] = c
				placed = true
				break
			}
		}
		if !placed {
			classOf[w] = len(cls)
			cls = append(cls, wclass{members: []int{w}, tier: in.ix.workerTier[w]})
		}
	}
	return cls, classOf
}

// swappable reports whether exchanging workers a and b is a symmetry of the
// problem.
func (in *instance) swappable(a, b int) bool {
	p, n := in.p, in.nW
	if in.ix.workerTier[a] != in.ix.workerTier[b] || p.Workers[a].Location != p.Workers[b].Location ||
		in.price[a] != in.price[b] {
		return false
	}
	for o := range in.caps {
		for v := range in.caps[o] {
			if in.caps[o][v][a] != in.caps[o][v][b] {
				return false
			}
		}
	}
	for s := range p.Sources {
		if in.slink[s*n+a] != in.slink[s*n+b] || in.sallowed[s*n+a] != in.sallowed[s*n+b] {
			return false
		}
	}
	for x := range n {
		if x == a || x == b {
			continue
		}
		if in.link[a*n+x] != in.link[b*n+x] || in.allowed[a*n+x] != in.allowed[b*n+x] ||
			in.link[x*n+a] != in.link[x*n+b] || in.allowed[x*n+a] != in.allowed[x*n+b] {
			return false
		}
	}
	return in.link[a*n+b] == in.link[b*n+a] && in.allowed[a*n+b] == in.allowed[b*n+a]
}

// netDominance is, per pair of classes (r, j), whether a worker of r is placed
// no worse than one of j: same tier and location (so moving items from j to r
// changes no tier link's traffic) and, to and from every other worker and
// source, a link no dearer and allowed wherever j's is. Nil when no pair of
// distinct classes qualifies.
func (in *instance) netDominance(cls []wclass) [][]bool {
	p := in.p
	var dom [][]bool
	for r := range cls {
		for j := range cls {
			if r == j {
				continue
			}
			a, c := cls[r].members[0], cls[j].members[0]
			if in.ix.workerTier[a] != in.ix.workerTier[c] || p.Workers[a].Location != p.Workers[c].Location {
				continue
			}
			if !in.placedNoWorse(a, c) {
				continue
			}
			if dom == nil {
				dom = make([][]bool, len(cls))
				for i := range dom {
					dom[i] = make([]bool, len(cls))
				}
			}
			dom[r][j] = true
		}
	}
	return dom
}

// placedNoWorse reports whether worker a's links dominate worker c's: from
// every source and to and from every other worker (members of both classes
// included: a parent or child of the operator may sit on one), flows with a
// are allowed wherever they are with c and cost no more. The flow between a
// and c does not matter: c is the worker dropped.
func (in *instance) placedNoWorse(a, c int) bool {
	n := in.nW
	for s := range in.p.Sources {
		if in.sallowed[s*n+c] && (!in.sallowed[s*n+a] || in.slink[s*n+a] > in.slink[s*n+c]) {
			return false
		}
	}
	for x := range n {
		if x == a || x == c {
			continue
		}
		if in.allowed[c*n+x] && (!in.allowed[a*n+x] || in.link[a*n+x] > in.link[c*n+x]) {
			return false
		}
		if in.allowed[x*n+c] && (!in.allowed[x*n+a] || in.link[x*n+a] > in.link[x*n+c]) {
			return false
		}
	}
	return true
}
