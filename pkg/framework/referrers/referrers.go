package referrers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Requests lists into list with opts and returns one request per item. A
// list error is logged and yields none: a map function cannot return one.
func Requests(ctx context.Context, reader client.Reader, list client.ObjectList, opts ...client.ListOption) []reconcile.Request {
	if err := reader.List(ctx, list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "listing the objects an event concerns", "list", typeName(list))
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		log.FromContext(ctx).Error(err, "reading a list", "list", typeName(list))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return reqs
}

// ByIndex maps an object to the objects of newList's kind in its namespace
// whose field index names it (e.g. the Controllers whose Secret index holds
// a Secret's name).
func ByIndex(reader client.Reader, newList func() client.ObjectList, field string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return Requests(ctx, reader, newList(), client.InNamespace(obj.GetNamespace()), client.MatchingFields{field: obj.GetName()})
	}
}

func typeName(list client.ObjectList) string { return fmt.Sprintf("%T", list) }
