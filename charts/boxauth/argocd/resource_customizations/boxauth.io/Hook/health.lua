-- Generated from charts/boxauth/argocd/health.lua.template by make chart-health: edit that file.
-- Argo CD health of a boxauth.io Hook: read as kstatus reads it (operator/reasons.ts,
-- docs/kubernetes/conditions.md), so Argo CD and Flux agree; but a resource the operator has not
-- written a status on yet is Progressing here (kstatus would call it Current). The same rules for
-- every kind: make chart-health writes each kind's health.lua from this template.
-- Argo CD runs this with gopher-lua (Lua 5.1): `obj` is the resource, the result a {status, message}.
-- A Box is Ready once everything it needs is in place; whether its pods serve is its Available
-- condition, which the message of a Healthy Box tells (its Deployment has a health of its own).
-- The other kinds have no Available condition.
local hs = { status = "Progressing", message = "Waiting for the boxauth operator" }
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and obj.status.observedGeneration ~= nil and obj.status.observedGeneration ~= generation then
  hs.message = "Waiting for the boxauth operator to reconcile generation " .. generation
  return hs
end
local found = {}
for _, condition in ipairs(obj.status.conditions) do
  found[condition.type] = condition
end
local function said(condition)
  return (condition.reason or "") .. ": " .. (condition.message or "")
end
if found.Stalled ~= nil and found.Stalled.status == "True" then
  return { status = "Degraded", message = said(found.Stalled) }
end
if found.Reconciling ~= nil and found.Reconciling.status == "True" then
  return { status = "Progressing", message = said(found.Reconciling) }
end
if found.Ready ~= nil and found.Ready.status == "True" then
  local message = said(found.Ready)
  if found.Available ~= nil then
    message = message .. " (Available " .. found.Available.status .. ": " .. (found.Available.message or "") .. ")"
  end
  return { status = "Healthy", message = message }
end
if found.Ready ~= nil then
  hs.message = said(found.Ready)
end
return hs
