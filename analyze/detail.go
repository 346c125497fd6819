package analyze

import (
	"fmt"
	"reflect"
)

// Typed details. A finding's Detail is a public JSON map (design.md); the
// code that reads it (reports, the replay) reads it through a struct that
// the analyzer declares, so the keys are written once:
//
//	type Detail struct {
//		CallsPerStep float64 `detail:"calls_per_step"` // munmap calls per steady step
//	}
//
//	f.Detail = analyze.DetailMap(Detail{CallsPerStep: 2})   // the analyzer
//	var d munmap.Detail; analyze.DecodeDetail(f, &d)         // a reader
//
// Fields are float64, int64, int or bool (true is 1); a field without a
// detail tag is not part of the map, except an embedded struct of an
// exported type, whose fields count as the outer struct's (an analyzer's
// Detail embeds the typed fix of package fix that the replay reads).

// DetailMap turns a detail struct into the finding's Detail map.
func DetailMap(v any) map[string]float64 {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	m := map[string]float64{}
	detailFields(rv, func(key string, f reflect.Value, name string) {
		switch f.Kind() {
		case reflect.Float64, reflect.Float32:
			m[key] = f.Float()
		case reflect.Int, reflect.Int64, reflect.Int32:
			m[key] = float64(f.Int())
		case reflect.Bool:
			m[key] = 0
			if f.Bool() {
				m[key] = 1
			}
		default:
			panic(fmt.Sprintf("analyze: detail field %s has unsupported type %s", name, f.Type()))
		}
	})
	return m
}

// DecodeDetail fills the detail struct that ptr points to from f's Detail
// map and reports whether every tagged field was present. Fields whose key
// is missing are left as they are.
func DecodeDetail(f *Finding, ptr any) bool {
	rv := reflect.ValueOf(ptr)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic("analyze: DecodeDetail wants a pointer to a struct")
	}
	all := true
	detailFields(rv.Elem(), func(key string, fv reflect.Value, name string) {
		x, ok := f.Detail[key]
		if !ok {
			all = false
			return
		}
		switch fv.Kind() {
		case reflect.Float64, reflect.Float32:
			fv.SetFloat(x)
		case reflect.Int, reflect.Int64, reflect.Int32:
			fv.SetInt(int64(x))
		case reflect.Bool:
			fv.SetBool(x != 0)
		default:
			panic(fmt.Sprintf("analyze: detail field %s has unsupported type %s", name, fv.Type()))
		}
	})
	return all
}

// detailFields calls fn with the key, the value and the name
// ("Detail.Field") of each tagged field of struct rv, in order, the fields
// of its embedded structs without a tag in their place.
func detailFields(rv reflect.Value, fn func(key string, f reflect.Value, name string)) {
	rt := rv.Type()
	for i := range rt.NumField() {
		sf := rt.Field(i)
		key, ok := sf.Tag.Lookup("detail")
		if !ok {
			if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
				detailFields(rv.Field(i), fn)
			}
			continue
		}
		fn(key, rv.Field(i), rt.Name()+"."+sf.Name)
	}
}
