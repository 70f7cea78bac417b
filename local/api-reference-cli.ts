import { API_REFERENCE_FILE, ensureApiReference } from '#local/gateway/api-reference-route.ts'

// `npm run docs`: renders openapi/openapi.json into one HTML page that reads offline (the local
// server serves the same page at /docs).
await ensureApiReference({ force: true })
process.stdout.write(
  `API reference written to ${API_REFERENCE_FILE} (also at http://127.0.0.1:3000/docs while npm start runs)\n`,
)
