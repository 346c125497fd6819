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
// detail tag is not part of the map.

// DetailMap turns a detail struct into the finding's Detail map.
func DetailMap(v any) map[string]float64 {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	m := map[string]float64{}
	rt := rv.Type()
	for i := range rt.NumField() {
		key, ok := rt.Field(i).Tag.Lookup("detail")
		if !ok {
			continue
		}
		f := rv.Field(i)
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
			panic(fmt.Sprintf("analyze: detail field %s.%s has unsupported type %s", rt.Name(), rt.Field(i).Name, f.Type()))
		}
	}
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
	rv = rv.Elem()
	rt := rv.Type()
	all := true
	for i := range rt.NumField() {
		key, ok := rt.Field(i).Tag.Lookup("detail")
		if !ok {
			continue
		}
		x, ok := f.Detail[key]
		if !ok {
			all = false
			continue
		}
		fv := rv.Field(i)
		switch fv.Kind() {
		case reflect.Float64, reflect.Float32:
			fv.SetFloat(x)
		case reflect.Int, reflect.Int64, reflect.Int32:
			fv.SetInt(int64(x))
		case reflect.Bool:
			fv.SetBool(x != 0)
		default:
			panic(fmt.Sprintf("analyze: detail field %s.%s has unsupported type %s", rt.Name(), rt.Field(i).Name, fv.Type()))
		}
	}
	return all
}
