package status

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusEqual compares the status of two objects of one type, ignoring
// IgnoredTimeFields at any depth. It judges as the statuses' JSON would:
// fields JSON leaves out do not count, nil and empty lists and maps are
// the same, quantities compare by value and times to the second.
//
// Typed objects are compared field by field, without converting them to
// unstructured maps: that conversion cost a map per field on every
// reconcile and, the first time, a reflection cache over every type of
// the object, the spec's pod templates included.
func StatusEqual(a, b client.Object) (bool, error) {
	ua, aIsU := a.(*unstructured.Unstructured)
	ub, bIsU := b.(*unstructured.Unstructured)
	if aIsU || bIsU {
		if !aIsU || !bIsU {
			return false, fmt.Errorf("status: comparing %T with %T", a, b)
		}
		return equality.Semantic.DeepEqual(stripTimes(ua.Object["status"]), stripTimes(ub.Object["status"])), nil
	}
	sa, err := statusField(a)
	if err != nil {
		return false, err
	}
	sb, err := statusField(b)
	if err != nil {
		return false, err
	}
	if sa.Type() != sb.Type() {
		return false, fmt.Errorf("status: comparing %T with %T", a, b)
	}
	return equalIgnoringTimes(sa, sb), nil
}

// statusField is the Status field of a typed object.
func statusField(obj client.Object) (reflect.Value, error) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct {
		if f := v.Elem().FieldByName("Status"); f.IsValid() {
			return f, nil
		}
	}
	return reflect.Value{}, fmt.Errorf("status: %T has no Status field", obj)
}

var timeType, microTimeType = reflect.TypeFor[metav1.Time](), reflect.TypeFor[metav1.MicroTime]()

// equalIgnoringTimes compares a and b, values of one type.
func equalIgnoringTimes(a, b reflect.Value) bool {
	t := a.Type()
	switch {
	case t == timeType:
		// JSON keeps seconds: a time read back from the server has lost
		// what the one just computed still has.
		ta, tb := a.Interface().(metav1.Time), b.Interface().(metav1.Time)
		return ta.IsZero() == tb.IsZero() && ta.Unix() == tb.Unix()
	case t == microTimeType:
		ta, tb := a.Interface().(metav1.MicroTime), b.Interface().(metav1.MicroTime)
		return ta.IsZero() == tb.IsZero() && ta.UnixMicro() == tb.UnixMicro()
	case !needsWalk(t):
		return equality.Semantic.DeepEqual(a.Interface(), b.Interface())
	}
	switch t.Kind() {
	case reflect.Struct:
		for _, i := range comparedFields(t) {
			if !equalIgnoringTimes(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalIgnoringTimes(a.Elem(), b.Elem())
	case reflect.Slice:
		// Fixed-length Go sequences (no API type has one, by the API
		// conventions) fall to the whole-value comparison below, which
		// can only report a difference where there is none: at worst
		// one write too many, never one missed.
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalIgnoringTimes(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for it := a.MapRange(); it.Next(); {
			vb := b.MapIndex(it.Key())
			if !vb.IsValid() || !equalIgnoringTimes(it.Value(), vb) {
				return false
			}
		}
		return true
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return a.Elem().Type() == b.Elem().Type() && equalIgnoringTimes(a.Elem(), b.Elem())
	}
	return equality.Semantic.DeepEqual(a.Interface(), b.Interface())
}

// typePlan is what the comparison needs to know of a type, worked out once.
type typePlan struct {
	// walk: a value of the type holds an ignored field, a time, a field
	// JSON leaves out or an interface somewhere below it, so it is compared
	// field by field rather than whole. Unexported fields are not in JSON,
	// and a type Semantic compares its own way is never walked.
	walk bool
	// fields are the indexes of a struct's fields that are compared.
	fields []int
}

var plans sync.Map // reflect.Type -> *typePlan

func needsWalk(t reflect.Type) bool       { return planOf(t).walk }
func comparedFields(t reflect.Type) []int { return planOf(t).fields }

func planOf(t reflect.Type) *typePlan {
	if p, ok := plans.Load(t); ok {
		return p.(*typePlan)
	}
	p := &typePlan{}
	if _, custom := equality.Semantic.Equalities[t]; custom {
		// Semantic knows how to compare it (a Quantity by value).
		plans.Store(t, p)
		return p
	}
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			f := t.Field(i)
			if name := jsonName(f); !f.IsExported() || name == "-" || isIgnoredTimeField(name) {
				p.walk = true
				continue
			}
			p.fields = append(p.fields, i)
		}
	}
	// A type that holds itself meets its own plan before the plan is
	// done: until then it is walked, which is always right.
	if prev, loaded := plans.LoadOrStore(t, &typePlan{walk: true, fields: p.fields}); loaded {
		return prev.(*typePlan)
	}
	switch t.Kind() {
	case reflect.Struct:
		for _, i := range p.fields {
			if ft := t.Field(i).Type; ft == timeType || ft == microTimeType || planOf(ft).walk {
				p.walk = true
			}
		}
	case reflect.Pointer, reflect.Slice, reflect.Map:
		p.walk = t.Elem() == timeType || t.Elem() == microTimeType || planOf(t.Elem()).walk
	case reflect.Interface:
		p.walk = true
	}
	plans.Store(t, p)
	return p
}

// jsonName is the name an exported field has in JSON, "-" when JSON
// leaves it out. An embedded struct is compared as one field.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		name = f.Name
	}
	return name
}

// stripTimes returns a copy of v without the ignored timestamp fields.
func stripTimes(v any) any {
	switch tv := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(tv))
		for k, val := range tv {
			if isIgnoredTimeField(k) {
				continue
			}
			out[k] = stripTimes(val)
		}
		return out
	case []any:
		out := make([]any, len(tv))
		for i := range tv {
			out[i] = stripTimes(tv[i])
		}
		return out
	default:
		return v
	}
}
