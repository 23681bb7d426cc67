package expr

import "testing"

// BenchmarkBuiltins is a registry of the built-ins as every bind takes one,
// beside making the functions again (what each bind did before they were
// made once): report the ratio of the two.
func BenchmarkBuiltins(b *testing.B) {
	b.Run("registry", func(b *testing.B) {
		for b.Loop() {
			_ = Builtins()
		}
	})
	b.Run("functions made again", func(b *testing.B) {
		for b.Loop() {
			_ = NewRegistry(builtinFunctions()...)
		}
	})
}
