package tool_test

import (
	"encoding/json"
	"fmt"

	"github.com/tollgate-dev/tollgate/tool"
)

// A host answering for a person names them; an answer that is not a
// person's carries its principal. Who gives the answerer either way.
func ExampleAnswer_Who() {
	byName := tool.Answer{ID: "req_1", OK: true, By: "alice"}
	byFlag := tool.Answer{ID: "req_2", OK: true, Principal: tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=yes"}}
	fmt.Println(byName.Who(), byFlag.Who())

	b, _ := json.Marshal(byName)
	fmt.Println(string(b))

	// An answer stored before answerers were typed still reads.
	var old tool.Answer
	_ = json.Unmarshal([]byte(`{"id":"req_3","ok":false,"by":"runtime"}`), &old)
	fmt.Println(old.Who(), old.By == "")

	both := tool.Answer{ID: "req_4", By: "bob", Principal: tool.Principal{Kind: tool.PrincipalPerson, Name: "alice"}}
	fmt.Println(both.Check())
	// Output:
	// person:alice flag:--approve=yes
	// {"id":"req_1","ok":true,"by":"alice"}
	// runtime true
	// answer "req_4": both by "bob" and principal "person:alice" were given and differ; give one, or by equal to the principal's name
}
