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
