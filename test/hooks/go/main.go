// A hook of boxauth's (docs/guides/hooks.md) for the tests, in Go's standard library only: the
// same as ../hook_server.py. HTTPS (CERT, KEY) on HOST (127.0.0.1 unless set; 0.0.0.0 in a Pod
// behind a Service):PORT (0: any; the first line out is "listening <port>"); each POST checked as a Standard Webhooks receiver does (webhook-id,
// webhook-timestamp within five minutes, webhook-signature: HMAC-SHA256 of "id.timestamp.body"
// under SECRET), an id seen before refused as a replay (401); the answer by the path.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	secret  []byte
	mu      sync.Mutex
	seenIDs = map[string]bool{}
	seen    = []map[string]any{}
)

func verify(h http.Header, body []byte) string {
	id, stamp, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || stamp == "" || sigs == "" {
		return "unsigned"
	}
	ts, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return "stale"
	}
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "%s.%s.", id, stamp)
	mac.Write(body)
	expected := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	ok := false
	for _, s := range strings.Split(sigs, " ") {
		_, sig, _ := strings.Cut(s, ",")
		if subtle.ConstantTimeCompare([]byte(sig), []byte(expected)) == 1 {
			ok = true
		}
	}
	if !ok {
		return "bad signature"
	}
	mu.Lock()
	defer mu.Unlock()
	if seenIDs[id] {
		return "replayed"
	}
	seenIDs[id] = true
	return ""
}

type call struct {
	Box     string `json:"box"`
	Hook    string `json:"hook"`
	Moment  string `json:"moment"`
	Request struct {
		Client *struct {
			ID string `json:"id"`
		} `json:"client"`
		User *struct {
			Email string `json:"email"`
		} `json:"user"`
		Person *struct {
			Email string `json:"email"`
		} `json:"person"`
		Password *struct {
			Password string `json:"password"`
		} `json:"password"`
	} `json:"request"`
}

func answer(w http.ResponseWriter, path string, c call) {
	parts := strings.SplitN(strings.Trim(path, "/"), "/", 2)
	kind, arg := parts[0], ""
	if len(parts) > 1 {
		arg = parts[1]
	}
	reply := func(v any) { w.Header().Set("Content-Type", "application/json"); json.NewEncoder(w).Encode(v) }
	switch kind {
	case "claims":
		reply(map[string]any{"allowed": true, "claims": map[string]any{"licence": "gold", "hook_lang": "go", "sub": "admin",
			"iss": "https://evil.example", "acr": "phr", "groups": []string{"admins"}, "email": "root@evil.example"}})
	case "echo":
		email, client := "", ""
		if c.Request.User != nil {
			email = c.Request.User.Email
		}
		if c.Request.Client != nil {
			client = c.Request.Client.ID
		}
		reply(map[string]any{"allowed": true, "claims": map[string]any{"seen": map[string]any{"box": c.Box, "hook": c.Hook, "moment": c.Moment, "email": email, "client": client}}})
	case "refuse":
		reply(map[string]any{"allowed": false, "message": "the licence of this team has expired"})
	case "slow":
		ms, _ := strconv.Atoi(arg)
		time.Sleep(time.Duration(ms) * time.Millisecond)
		reply(map[string]any{"allowed": true, "claims": map[string]any{"slow": true}})
	case "hang":
		time.Sleep(time.Hour)
	case "garbage":
		w.Write([]byte("this is not JSON"))
	case "redirect":
		http.Redirect(w, &http.Request{}, "https://127.0.0.1:"+arg+"/claims", http.StatusTemporaryRedirect)
	case "stepup":
		if arg == "" {
			arg = "urn:boxauth:acr:mfa"
		}
		reply(map[string]any{"allowed": true, "acr": arg})
	case "person":
		if c.Request.Person == nil || !strings.HasSuffix(c.Request.Person.Email, "@example.com") {
			reply(map[string]any{"allowed": false, "message": "only addresses of example.com may sign up"})
			return
		}
		reply(map[string]any{"allowed": true, "data": map[string]any{"employee": "E-1"}, "groups": []string{"staff"}})
	case "password":
		reply(map[string]any{"valid": c.Request.Password != nil && c.Request.Password.Password == arg})
	default:
		reply(map[string]any{"allowed": true})
	}
}

func main() {
	var err error
	if secret, err = base64.StdEncoding.DecodeString(strings.TrimPrefix(os.Getenv("SECRET"), "whsec_")); err != nil {
		panic(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			mu.Lock()
			defer mu.Unlock()
			json.NewEncoder(w).Encode(seen)
			return
		}
		body, _ := io.ReadAll(r.Body)
		problem := verify(r.Header, body)
		var c call
		if problem == "" {
			json.Unmarshal(body, &c)
		}
		headers := map[string]string{}
		for k := range r.Header {
			headers[strings.ToLower(k)] = r.Header.Get(k)
		}
		mu.Lock()
		var p any
		if problem != "" {
			p = problem
		}
		seen = append(seen, map[string]any{"path": r.URL.Path, "problem": p, "headers": headers, "body": string(body), "box": c.Box, "hook": c.Hook, "moment": c.Moment})
		mu.Unlock()
		if problem != "" {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]string{"error": problem})
			return
		}
		answer(w, r.URL.Path, c)
	})
	host := os.Getenv("HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(host, os.Getenv("PORT")))
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening %d\n", listener.Addr().(*net.TCPAddr).Port)
	panic(http.ServeTLS(listener, handler, os.Getenv("CERT"), os.Getenv("KEY")))
}
