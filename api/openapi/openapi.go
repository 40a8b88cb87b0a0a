// Package openapi embeds the OpenAPI (Swagger 2.0) document generated from
// the API contract in api/proto, so the server can serve it.
package openapi

import _ "embed"

// Document is the generated OpenAPI document of the Wayfinder REST API.
//
//go:embed wayfinder.swagger.json
var Document []byte
