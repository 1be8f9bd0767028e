// Fastify's docs as fastify.dev publishes them (Docusaurus, preset-classic, the docs at the site root), from the
// docs/ folder of the fastify npm package (copied to ./docs by scripts/build_js_docs.sh). Offline: no Algolia
// search, no analytics. Plain Markdown (`format: 'detect'`: .md is CommonMark with raw HTML, not MDX), so the
// files build as shipped, without the fixes fastify.dev applies to parse them as MDX.

/** @type {import('@docusaurus/types').Config} */
module.exports = {
  title: 'Fastify',
  tagline: 'Fast and low overhead web framework, for Node.js',
  url: 'https://fastify.dev',
  baseUrl: '/',
  onBrokenLinks: 'warn',
  onBrokenMarkdownLinks: 'warn',
  onBrokenAnchors: 'ignore',
  markdown: { format: 'detect' },
  i18n: { defaultLocale: 'en', locales: ['en'] },
  presets: [
    [
      'classic',
      {
        docs: {
          routeBasePath: '/',
          sidebarPath: require.resolve('./sidebars.js'),
          editUrl: 'https://github.com/fastify/fastify/edit/main/',
        },
        blog: false,
        theme: {},
      },
    ],
  ],
  themeConfig: {
    navbar: {
      title: 'Fastify',
      items: [
        { type: 'doc', docId: 'Guides/Index', label: 'Guides', position: 'left' },
        { type: 'doc', docId: 'Reference/Index', label: 'Reference', position: 'left' },
        { href: 'https://github.com/fastify/fastify', label: 'GitHub', position: 'right' },
      ],
    },
    footer: {
      style: 'dark',
      links: [
        {
          title: 'Community',
          items: [{ label: 'Discord', href: 'https://discord.gg/fastify' }],
        },
      ],
      copyright: 'Copyright © the Fastify contributors. Built with Docusaurus.',
    },
  },
}
