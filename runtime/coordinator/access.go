package coordinator

import "github.com/tierflow/tierflow/runtime/deploy"

// access is the authority user's queries act with on data subjects.
func (c *Coordinator) access(user string) deploy.Access {
	return deploy.Access{}
}
