package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
)

// PrintRows writes rows (a slice of structs) as an aligned table, or as a JSON array
// when format is "json". Column headers and JSON keys both come from the `json`
// struct tags, so the two forms always carry the same fields.
func PrintRows(w io.Writer, format string, rows any) error {
	switch format {
	case "", "table":
		return renderRowsTable(w, rows)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	default:
		return BadInput(fmt.Errorf("unknown --format %q: want table or json", format))
	}
}

func renderRowsTable(w io.Writer, rows any) error {
	v := reflect.ValueOf(rows)
	if v.Kind() != reflect.Slice {
		return fmt.Errorf("PrintRows: want a slice of structs, got %T", rows)
	}
	et := v.Type().Elem()
	if et.Kind() == reflect.Pointer {
		et = et.Elem()
	}
	if et.Kind() != reflect.Struct {
		return fmt.Errorf("PrintRows: want a slice of structs, got %T", rows)
	}
	var header []string
	var fields []int
	for i := 0; i < et.NumField(); i++ {
		f := et.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		header = append(header, name)
		fields = append(fields, i)
	}
	t := tablewriter.NewWriter(w)
	t.Header(anySlice(header)...)
	for i := 0; i < v.Len(); i++ {
		row := reflect.Indirect(v.Index(i))
		cells := make([]any, len(fields))
		for j, fi := range fields {
			cells[j] = formatCell(row.Field(fi))
		}
		if err := t.Append(cells...); err != nil {
			return err
		}
	}
	return t.Render()
}

// formatCell keeps floats short: benchmark tables are read, not parsed.
func formatCell(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		switch {
		case f == 0:
			return "0"
		case f >= 1000 || f <= -1000:
			return strconv.FormatFloat(f, 'f', 0, 64)
		case f >= 1 || f <= -1:
			return strconv.FormatFloat(f, 'f', 3, 64)
		default:
			return strconv.FormatFloat(f, 'g', 4, 64)
		}
	default:
		return fmt.Sprint(v.Interface())
	}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}
