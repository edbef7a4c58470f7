package syncobject

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Derivative reports whether live carries every field desired sets. A field
// desired leaves at its zero value — empty string, 0, false, nil, empty
// slice or map — counts as unset, because the API server fills such fields
// with defaults (a probe's periodSeconds, a port's protocol) that are not
// drift. Behind a non-nil pointer the zero value is a real request
// (replicas: 0) and must match.
//
// It differs from apimachinery's equality.Semantic.DeepDerivative, which
// compares plain integers exactly: a desired probe without timeoutSeconds
// would then never match the defaulted live probe, and every reconcile
// would rewrite the template.
func Derivative(desired, live any) bool {
	return derivative(reflect.ValueOf(desired), reflect.ValueOf(live), false)
}

var (
	quantityType = reflect.TypeOf(resource.Quantity{})
	timeType     = reflect.TypeOf(metav1.Time{})
	microType    = reflect.TypeOf(metav1.MicroTime{})
)

func derivative(d, l reflect.Value, explicit bool) bool {
	if !d.IsValid() {
		return true
	}
	if !l.IsValid() {
		return !explicit && d.IsZero()
	}
	if d.Type() != l.Type() {
		return equality.Semantic.DeepEqual(d.Interface(), l.Interface())
	}
	switch d.Type() {
	case quantityType, timeType, microType:
		if !explicit && d.IsZero() {
			return true
		}
		return equality.Semantic.DeepEqual(d.Interface(), l.Interface())
	}
	switch d.Kind() {
	case reflect.Pointer:
		if d.IsNil() {
			return true
		}
		if l.IsNil() {
			return false
		}
		return derivative(d.Elem(), l.Elem(), true)
	case reflect.Interface:
		if d.IsNil() {
			return true
		}
		if l.IsNil() {
			return false
		}
		return derivative(d.Elem(), l.Elem(), explicit)
	case reflect.Struct:
		for i := 0; i < d.NumField(); i++ {
			if !d.Type().Field(i).IsExported() {
				continue
			}
			if !derivative(d.Field(i), l.Field(i), false) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if d.Len() == 0 && !explicit {
			return true
		}
		if d.Len() != l.Len() {
			return false
		}
		for i := 0; i < d.Len(); i++ {
			if !derivative(d.Index(i), l.Index(i), false) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := 0; i < d.Len(); i++ {
			if !derivative(d.Index(i), l.Index(i), false) {
				return false
			}
		}
		return true
	case reflect.Map:
		if d.Len() == 0 && !explicit {
			return true
		}
		for _, k := range d.MapKeys() {
			lv := l.MapIndex(k)
			if !lv.IsValid() || !derivative(d.MapIndex(k), lv, false) {
				return false
			}
		}
		return true
	default:
		if !explicit && d.IsZero() {
			return true
		}
		return d.Interface() == l.Interface()
	}
}
