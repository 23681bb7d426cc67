// Package dataaware is SneakPeek (Wolfrath et al., SoCC '25) in the runtime:
// per-class profiles of model variants (ClassRecalls), the estimator of a
// live stream's class mix (a Dirichlet posterior fed by k-nearest-neighbour
// evidence from a sample of the training data, or by one cheap model's
// predictions: Estimator, KNN), the expected accuracy of every variant under
// that mix, and the multi-application request schedulers of section 5
// (MaxAcc-EDF, LO-EDF, Grouped, SneakPeek) with their utility functions.
//
// It imports the planner's catalog (profiles are catalog values) and
// runtime/control (the re-planning Policy); never runtime/coordinator,
// runtime/worker or cmd.
package dataaware
