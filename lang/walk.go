package lang

import "reflect"

var nodeType = reflect.TypeOf((*Node)(nil)).Elem()

// Inspect visits n and then, if f returned true, every node below it, depth
// first in field (source) order, like go/ast.Inspect. f is never called with
// nil.
func Inspect(n Node, f func(Node) bool) {
	if n == nil || reflect.ValueOf(n).IsNil() {
		return
	}
	if !f(n) {
		return
	}
	inspectFields(reflect.ValueOf(n).Elem(), f)
}

func inspectFields(v reflect.Value, f func(Node) bool) {
	for i := 0; i < v.NumField(); i++ {
		if v.Type().Field(i).IsExported() {
			inspectValue(v.Field(i), f)
		}
	}
}

func inspectValue(v reflect.Value, f func(Node) bool) {
	switch v.Kind() {
	case reflect.Interface, reflect.Ptr:
		if v.IsNil() {
			return
		}
		if v.Type().Implements(nodeType) || v.Elem().Type().Implements(nodeType) {
			if n, ok := v.Interface().(Node); ok {
				Inspect(n, f)
				return
			}
		}
		if v.Kind() == reflect.Ptr && v.Elem().Kind() == reflect.Struct {
			inspectFields(v.Elem(), f)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			inspectValue(v.Index(i), f)
		}
	}
}

// Rewrite returns a deep copy of n in which every node for which f returns
// a replacement (ok true) is that replacement (not copied, not visited
// further); f returning ok false copies the node and visits below it.
// Positions are kept. The original is not changed, so a rewritten copy of a
// subquery can be bound next to the original.
func Rewrite[T Node](n T, f func(Node) (Node, bool)) T {
	out := rewriteValue(reflect.ValueOf(n), f)
	return out.Interface().(T)
}

func rewriteValue(v reflect.Value, f func(Node) (Node, bool)) reflect.Value {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		inner := rewriteValue(v.Elem(), f)
		out := reflect.New(v.Type()).Elem()
		out.Set(inner)
		return out
	case reflect.Ptr:
		if v.IsNil() {
			return v
		}
		if n, ok := v.Interface().(Node); ok {
			if r, ok := f(n); ok {
				return reflect.ValueOf(r)
			}
		}
		if v.Elem().Kind() != reflect.Struct {
			c := reflect.New(v.Elem().Type())
			c.Elem().Set(rewriteValue(v.Elem(), f))
			return c
		}
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(v.Elem()) // unexported fields and values as they are
		for i := 0; i < v.Elem().NumField(); i++ {
			if v.Elem().Type().Field(i).IsExported() {
				c.Elem().Field(i).Set(rewriteValue(v.Elem().Field(i), f))
			}
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			c.Index(i).Set(rewriteValue(v.Index(i), f))
		}
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				c.Field(i).Set(rewriteValue(v.Field(i), f))
			}
		}
		return c
	}
	return v
}
